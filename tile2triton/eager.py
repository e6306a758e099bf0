"""Eager-style ``@tilelang.jit``: the decorated function receives the tensors and runs the kernel.

```
@tilelang.jit
def copy(A, BLOCK_N: int):
    N = T.const("N")                 # compile-time constant, read from A.shape[0]
    A: T.Tensor((N,), T.float16)     # declares parameter A
    B = T.empty((N,), T.float16)     # an output the runtime allocates
    with T.Kernel(T.ceildiv(N, BLOCK_N), threads=256) as bx:
        ...
    return B

b = copy(a, 1024)                    # compile (once per distinct N) and run
k = copy.compile(N=4096, BLOCK_N=1024)   # a JITKernel; k(a) -> b
```

Parameters fall in three kinds, fixed by the signature and the body:
* tensors: declared in the body (``A: T.Tensor(...)``) or in the signature with ``T.Tensor``;
* run-time scalars: annotated with a TileLang dtype in the signature (``x: T.float32 = 1``) or in the body
  before the kernel (``M: T.int32``, as TileLang's eager-JIT notebook declares run-time sizes);
* everything else is a compile-time value (block sizes, dtypes, flags).

Two caches, as in TileLang's ``JITFunc``: phase 1 (keyed by the compile-time values) learns where
each ``T.const`` appears in the tensors' shapes and strides; phase 2 (keyed additionally by the
constants' values) holds the compiled ``JITKernel``.  ``T.dynamic`` sizes are not part of either
key: one kernel serves every size.  The tensors' dtypes and device kind are not key parts either:
dtypes are fixed by the declarations (themselves fixed by the compile-time values), a tensor of
another dtype is a call error, and each ``JITKernel`` holds one lowering per device kind.

In front of both, a call whose shapes and compile-time values were seen in a call that worked
goes through a generated entry: its key (the positional arguments' shapes and values, and for a
call with keywords, each keyword's name, class and value) is one dict lookup to the kernel, whose
own generated launcher then checks and launches.  Keywords are served when they give compile-time
values only (``kernel(Q, K, dim=64, block=32)``, TileLang's usual spelling); a tensor or run-time
scalar given by keyword takes the full path.
"""

from __future__ import annotations

import ast
import operator
import threading
import warnings
from collections.abc import Callable

import torch

from . import ir
from .compiler import argument_key
from .errors import KernelCallError, TileLangCompileError, user_facing
from .frontend.bind import Binder
from .frontend.eager_bind import EagerDecls, bind_eager, declare_eager, eager_args, matched_params
from .frontend.source import FunctionSource
from .language.dtypes import DType, is_packed
from .language.proxy import TensorType
from .passes.pipeline import run_passes
from .runtime.cache import stats
from .runtime.kernel import JITKernel, exec_generated
from .runtime.validate import describe

_MISSING = object()
_TENSOR = "<tensor>"  # phase-1 key entry of a parameter given a tensor
_ABSENT = "<absent>"  # ... and of one not given (compile() without the tensor)


class _Plan:
    """Phase-1 result for one set of compile-time values: how to bind constants at a call."""

    def __init__(self, fn: EagerFunction, decls: EagerDecls, key: tuple):
        self.decls = decls
        self.const_names = list(decls.consts)
        names = fn.param_names
        # tensor parameters, in signature order
        self.tensors = {names.index(n): (n, decls.tensors[n][0]) for n in names if n in decls.tensors}
        # kernel inputs: tensors and run-time scalars, in signature order
        self.inputs = [i for i, n in enumerate(names) if n in decls.tensors or n in fn.scalars]
        placeholder = {id(v): n for n, v in decls.consts.items()}
        # where each constant appears directly: (param index, param name, "shape"/"stride", dim, declared type)
        sources: dict[str, list] = {n: [] for n in self.const_names}
        for i, (name, ttype) in self.tensors.items():
            for kind, dims in (("shape", ttype.shape), ("stride", ttype.strides or ())):
                for d, dim in enumerate(dims):
                    if isinstance(dim, ir.VarRef) and id(dim.var) in placeholder:
                        sources[placeholder[id(dim.var)]].append((i, name, kind, d, ttype))
        self.flat = [(c, tuple(src)) for c, src in sources.items()]
        # the kernel cache key part: a tensor given or not (compile()) binds the same kernel
        self.kernel_key = tuple(_TENSOR if m is _ABSENT else m for m in key)
        # what is wrong with calls of this key, found once (None: nothing)
        self.call_error = self.compile_error = None
        for i, name in enumerate(names):
            marker = key[i]
            if i in self.tensors:
                if marker is _ABSENT:
                    self.call_error = self.call_error or f"{fn.name}: missing tensor argument '{name}'"
                elif marker is not _TENSOR:
                    msg = (f"{fn.name}: parameter '{name}' expects a torch.Tensor declared {_fmt_type(self.tensors[i][1])}, "
                           f"got {marker[2] if len(marker) == 3 else describe(marker[1])}")  # fmt: skip
                    self.call_error = self.call_error or msg
                    self.compile_error = self.compile_error or msg
            elif name in fn.scalars:
                if marker is _ABSENT:
                    self.call_error = self.call_error or (
                        f"{fn.name}: missing scalar argument '{name}' ({fn.scalars[name].name})"
                    )
            elif marker is _ABSENT:
                self.call_error = self.compile_error = f"{fn.name}: missing argument '{name}'"
            elif marker is _TENSOR:
                msg = (f"{fn.name}: parameter '{name}' received a torch.Tensor, but the kernel body does not "
                       f"declare it; add '{name}: T.Tensor(shape, dtype)' before T.Kernel")  # fmt: skip
                self.call_error = self.compile_error = msg

    def const_values(self, fn: EagerFunction, values: list, extra: dict) -> tuple:
        if extra and fn.var_keyword is not None:  # the other keywords are **metadata's
            extra = {k: v for k, v in extra.items() if k in self.decls.consts}
        if extra:
            unknown = [k for k in extra if k not in self.decls.consts]
            if unknown:
                raise KernelCallError(
                    f"{fn.name}: unexpected keyword argument(s) {', '.join(unknown)} "
                    f"(parameters: {', '.join(fn.param_names)}; T.const names: {', '.join(self.const_names) or 'none'})"
                )
        result = []
        for const, sources in self.flat:
            value = extra.get(const, _MISSING) if extra else _MISSING
            origin = f"keyword argument {const}="
            for i, pname, kind, d, ttype in sources:
                t = values[i]
                if t is _MISSING:
                    continue
                if t.dim() != len(ttype.shape):
                    raise KernelCallError(
                        f"{fn.name}: parameter '{pname}' expects a {len(ttype.shape)}-D tensor "
                        f"{_fmt_decl(ttype.shape)}, got shape {tuple(t.shape)}"
                    )
                actual = t.shape[d] if kind == "shape" else t.stride(d)
                if is_packed(ttype.dtype) and (kind == "shape") == (d == t.dim() - 1):
                    actual *= 2  # fp4 / int4 bytes hold two values: the last dim's size, the others' strides
                if value is _MISSING:
                    value, origin = actual, (i, kind, d)
                elif value != actual:
                    if isinstance(origin, tuple):
                        j, okind, od = origin
                        origin = _where(fn.param_names[j], okind, od)
                    raise KernelCallError(
                        f"{fn.name}: T.const '{const}' is bound twice with different values: "
                        f"{origin} = {value} but {_where(pname, kind, d)} = {actual}"
                    )
            if value is _MISSING:
                raise KernelCallError(
                    f"{fn.name}: T.const '{const}' cannot be bound: "
                    + (
                        "the tensors it is a dimension of were not given"
                        if sources
                        else "it is not directly a dimension or stride of any tensor parameter"
                    )
                    + f"; pass it as a keyword argument ({const}=...)"
                )
            if value.__class__ is not int:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise KernelCallError(f"{fn.name}: T.const '{const}' must be an int, got {value!r}")
                value = int(value)
            result.append(value)
        return tuple(result)


class _AnnotatedTensor:
    """A ``T.Tensor[shape, dtype]`` given to ``compile`` in place of a tensor: the shape and
    strides (row-major unless given) a tensor would have, for binding ``T.const`` sizes."""

    def __init__(self, ttype: TensorType):
        self.ttype = ttype
        self.shape = tuple(ttype.shape)
        strides = ttype.strides
        if strides is None:
            strides, step = [], 1
            for d in reversed(self.shape):
                strides.insert(0, step)
                step = step * d if isinstance(step, int) and isinstance(d, int) else None
        self.strides = tuple(strides)

    def dim(self) -> int:
        return len(self.shape)

    def stride(self, d: int):
        return self.strides[d]

    def check(self, where: str, declared: TensorType) -> None:
        """The annotation's shape must agree with the body's declaration where both are literals; a
        dtype that differs is warned about and the declaration's compiled, as TileLang does (the
        eager_jit notebook's ``par_compile`` hands float32 placeholders to a float16 GEMM)."""
        if self.ttype.dtype != declared.dtype:
            warnings.warn(f"{where} is declared {_fmt_type(declared)}, got {_fmt_type(self.ttype)}: compiled for "
                          f"{declared.dtype.name}, as declared", stacklevel=2)  # fmt: skip
        for got, want in zip(self.shape, declared.shape):
            if isinstance(want, int) and isinstance(got, int) and got != want:
                raise KernelCallError(f"{where} is declared {_fmt_type(declared)}, got {_fmt_type(self.ttype)}")


def _where(pname: str, kind: str, d: int) -> str:
    return f"{pname}.shape[{d}]" if kind == "shape" else f"{pname}.stride()[{d}]"


class EagerFunction:
    """The object behind an eager-style ``@tilelang.jit`` function."""

    def __init__(self, source: FunctionSource, options: dict | None = None):
        self.source = source
        self.options = dict(options or {})
        self.name = source.name
        tree = source.tree
        if tree.args.vararg is not None:
            raise TileLangCompileError(
                f"an eager @tilelang.jit function cannot take *{tree.args.vararg.arg}",
                ir.Loc(source.file, tree.lineno, tree.col_offset),
            )
        args = eager_args(tree)
        self.param_names = [a.arg for a in args]
        # ``**metadata``: the keyword arguments that name no parameter, a dict of compile-time values in
        # the body (as Python binds it; TileLang's binding flattens them into its cache key).  It is the
        # last entry of param_names, after every parameter a call can give positionally or by name.
        self.var_keyword = tree.args.kwarg.arg if tree.args.kwarg is not None else None
        if self.var_keyword is not None:
            self.param_names.append(self.var_keyword)
        self.n_positional = len(tree.args.posonlyargs) + len(tree.args.args)
        self.index = {n: i for i, n in enumerate(self.param_names)}
        func = source.func
        self.defaults: dict = {}
        pos = self.param_names[: self.n_positional]
        for name, value in zip(pos[len(pos) - len(func.__defaults__ or ()) :], func.__defaults__ or ()):
            self.defaults[name] = value
        self.defaults.update(func.__kwdefaults__ or {})
        # run-time scalars: parameters annotated with a TileLang dtype in the signature
        self.scalars: dict[str, DType] = {}
        self.signature_tensors: set = set()
        binder = Binder(source)
        # the signature's annotations, then the body's ``M: T.int32`` (TileLang's annotation of a run-time
        # scalar parameter; a tensor declared in the body is a body declaration, not a signature tensor)
        annotated = [(a.arg, a.annotation, True) for a in args if a.annotation is not None]
        annotated += [(st.target.id, st.annotation, False) for st in tree.body
                      if isinstance(st, ast.AnnAssign) and st.value is None and isinstance(st.target, ast.Name)
                      and st.target.id in self.index]  # fmt: skip
        matched = matched_params(tree)
        for name, annotation, in_signature in annotated:
            if name in self.scalars:
                continue
            try:
                ann = binder.expr(annotation)
            except TileLangCompileError:
                continue
            if isinstance(ann, DType) and ann.kind == "ptr" and name in matched:
                continue  # ``A: T.ptr`` then ``A = T.match_buffer(A, [M, N], dtype)``: a tensor declared in the body
            if isinstance(ann, DType):
                self.scalars[name] = ann
            elif isinstance(ann, TensorType) and in_signature:
                self.signature_tensors.add(name)
        self.scalar_index = [self.index[n] for n in self.scalars]
        # all-positional arities the generated entry serves: the parameters after them have defaults
        kwonly = [a.arg for a in tree.args.kwonlyargs]
        self.n_min = self.n_positional - len(func.__defaults__ or ())
        if any(name not in self.defaults for name in kwonly):
            self.n_min = self.n_positional + 1  # a keyword-only parameter must be given: none
        self._value_index = [i for i, n in enumerate(self.param_names) if n not in self.scalars]
        self._plans: dict = {}
        self._kernels: dict = {}
        # second tier, all-positional calls: phase-1 key -> (shape readers, {consts: kernel}, inputs, plan)
        self._fast: dict = {}
        self._lock = threading.RLock()
        # positional calls seen to work: call key (_key_source) -> (kernel, picker of its inputs or None)
        self._calls: dict = {}
        # calls with compile-time keywords seen to work: (positional key, keywords' key) -> the same
        self._keyword_calls: dict = {}
        self._pickers: dict = {}
        self._entry, self._call_keys = _generate_entry(self)

    # ---------------------------------------------------------------- public API
    # ``fn(*args)`` is the generated entry (``_generate_entry``): a call whose shapes and values
    # were seen before is one dict lookup, then the kernel's own launcher; others go to ``_call``
    __call__ = property(operator.attrgetter("_entry"), doc="Bind the constants, compile if new, run the kernel.")

    def cache_key(self, *args, **kwargs):
        """The key a call with these arguments is cached under: the tensors' shapes and the other
        arguments' values (``JITImpl.parse_cache_key``)."""
        # the generated entry's key for up to the positional parameters' count (``_generate_entry``)
        key = self._call_keys[len(args)](*args) if len(args) in self._call_keys else argument_key(args)
        return (key, _keywords_key(kwargs)) if kwargs else key

    @user_facing
    def _call(self, *args, **kwargs):
        """Every call the generated entry does not serve: bind, compile if new, run, remember."""
        positional = not kwargs and len(args) == len(self.param_names)
        if positional:
            # second tier (every argument positional): phase-1 key from the non-tensor values,
            # then the constants read straight from the shapes; anything unusual takes the full path
            key = tuple([_TENSOR if isinstance(v, torch.Tensor) else (v.__class__, v) for v in args])
            try:
                fast = self._fast.get(key)
            except TypeError:  # an unhashable value (a numpy array): the full path names it
                fast = None
            if fast is not None:
                readers, kernels, inputs, fast_plan = fast
                try:
                    consts = tuple([args[i].shape[d] for i, d, ndim in readers if args[i].ndim == ndim])
                except (AttributeError, IndexError, TypeError):
                    consts = None
                kernel = kernels.get(consts) if consts is not None and len(consts) == len(readers) else None
                if kernel is not None:
                    out = kernel(*args) if inputs is None else kernel(*[args[i] for i in inputs])
                    self._remember_call(args, fast_plan, kernel)
                    return out
        values, extra = self._bind_args(args, kwargs)
        kernel, plan = self._kernel_for(values, extra, need_tensors=True)
        if positional:
            self._remember(args, plan, kernel)
        out = kernel(*[values[i] for i in plan.inputs])
        self._remember_call(args, plan, kernel, kwargs)
        return out

    def _remember_call(self, args, plan: _Plan, kernel: JITKernel, kwargs: dict | None = None) -> None:
        """Let the generated entry serve later calls with these argument shapes and values."""
        calls = self._keyword_calls if kwargs else self._calls
        if len(calls) >= _MAX_CALLS or not self._call_key_ok(args, plan, kwargs):
            return
        try:
            key = self.cache_key(*args, **(kwargs or {}))
            hash(key)
        except TypeError:  # an unhashable compile-time value
            return
        inputs = tuple(plan.inputs)
        n = len(args)
        pick = None
        if inputs != tuple(range(n)):
            pick = self._pickers.get((n, inputs))
            if pick is None:
                pick = self._pickers[(n, inputs)] = _picker(inputs, n, [self._default(i) for i in inputs])
        calls[key] = (kernel, pick)

    def _call_key_ok(self, args, plan: _Plan, kwargs: dict | None = None) -> bool:
        """Does the call key (shapes and compile-time values) determine the kernel for these arguments,
        and are the kernel's inputs the positional arguments (then defaults)?"""
        if not (0 if kwargs else self.n_min) <= len(args) <= self.n_positional:
            return False
        if kwargs:
            names = self.param_names
            if any(names[i] in kwargs for i in plan.inputs):
                return False  # a tensor or run-time scalar by keyword: the picker reads positions only
        if any(src[2] != "shape" for _, sources in plan.flat for src in sources):
            return False  # a constant read from a stride: strides are not in the key
        # a tensor subclass enters the key as itself (by identity): never seen again
        return all(a.__class__ is torch.Tensor for a in args if isinstance(a, torch.Tensor))

    def _default(self, i: int):
        return self.defaults.get(self.param_names[i], _MISSING)

    def _remember(self, args, plan: _Plan, kernel: JITKernel) -> None:
        """Let later all-positional calls with these compile-time values skip the full binding."""
        if self.scalars or any(len(src) != 1 or src[0][2] != "shape" or is_packed(src[0][4].dtype)
                               for _, src in plan.flat):  # fmt: skip
            return  # scalars would enter the key by value; shared, stride or packed constants need the full check
        try:
            key = tuple([_TENSOR if isinstance(v, torch.Tensor) else (v.__class__, v) for v in args])
            hash(key)
        except TypeError:
            return
        readers = tuple((src[0][0], src[0][3], len(src[0][4].shape)) for _, src in plan.flat)
        inputs = None if plan.inputs == list(range(len(args))) else tuple(plan.inputs)
        consts = tuple(args[i].shape[d] for i, d, _ in readers)
        entry = self._fast.setdefault(key, (readers, {}, inputs, plan))
        entry[1][consts] = kernel

    @user_facing
    def compile(self, *args, **kwargs) -> JITKernel:
        """The kernel for these arguments; constants from tensors given, from ``T.Tensor[shape,
        dtype]`` annotations given in their place (as TileLang's ``compile``/``get_tir`` take them),
        or keyword arguments."""
        values, extra = self._bind_args(args, kwargs, partial=True)
        values = [_AnnotatedTensor(v) if isinstance(v, TensorType) else v for v in values]
        kernel, plan = self._kernel_for(values, extra, need_tensors=False)
        for i, (name, declared) in plan.tensors.items():
            if isinstance(values[i], _AnnotatedTensor):
                values[i].check(f"{self.name}: parameter '{name}'", declared)
        return kernel

    def get_tir(self, *args, **kwargs) -> ir.PrimFunc:
        return self.compile(*args, **kwargs).prim_func

    @user_facing
    def get_kernel_source(self, *args, **kwargs) -> str:
        return self.compile(*args, **kwargs).get_kernel_source()

    def cache_info(self) -> dict:
        return {"plans": len(self._plans), "kernels": len(self._kernels)}

    # ---------------------------------------------------------------- binding
    def _bind_args(self, args, kwargs, partial=False):
        names = self.param_names
        if len(args) > self.n_positional:
            raise KernelCallError(
                f"{self.name} takes {self.n_positional} positional argument(s) ({', '.join(names[: self.n_positional])}), "
                f"got {len(args)}"
            )
        values = list(args) + [_MISSING] * (len(names) - len(args))
        extra = {}
        for key, value in kwargs.items():
            i = self.index.get(key)
            if i is None or key == self.var_keyword:
                extra[key] = value  # a T.const value (checked against the declared constants), or **metadata's
            elif values[i] is not _MISSING:
                raise KernelCallError(f"{self.name}: parameter '{key}' is given twice (positionally and as {key}=)")
            else:
                values[i] = value
        for i, name in enumerate(names):
            if values[i] is _MISSING and name in self.defaults:
                values[i] = self.defaults[name]
        if self.var_keyword is not None:
            values[-1] = dict(extra)
        return values, extra

    def _phase1_key(self, values: list) -> tuple:
        """One entry per parameter: the compile-time value, or a marker (tensor, absent, scalar given)."""
        key = []
        for v in values:
            if v is _MISSING:
                key.append(_ABSENT)
            elif isinstance(v, (torch.Tensor, _AnnotatedTensor)):
                key.append(_TENSOR)
            else:
                try:
                    hash(v)
                    key.append((type(v), v))
                except TypeError:  # kept with its description, for an error naming it (an array)
                    key.append((type(v), argument_key(v), describe(v)))
        for i in self.scalar_index:  # run-time scalars: only whether one was given is part of the key
            if key[i] is not _ABSENT:
                key[i] = None
        return tuple(key)

    def _plan_for(self, key: tuple, values: list) -> _Plan:
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                plan = self._plans.get(key)
                if plan is None:
                    decls = declare_eager(self.source, self._compile_values(values), self.scalars)
                    plan = _Plan(self, decls, key)
                    self._plans[key] = plan
        return plan

    def _compile_values(self, values: list) -> dict:
        out = {}
        for i in self._value_index:
            v = values[i]
            if v is not _MISSING and not isinstance(v, (torch.Tensor, _AnnotatedTensor)):
                out[self.param_names[i]] = v
        return out

    def _kernel_for(self, values: list, extra: dict, need_tensors: bool):
        key1 = self._phase1_key(values)
        plan = self._plans.get(key1) or self._plan_for(key1, values)
        error = plan.call_error if need_tensors else plan.compile_error
        if error is not None:
            raise KernelCallError(error)
        consts = plan.const_values(self, values, extra)
        key = (plan.kernel_key, consts)
        kernel = self._kernels.get(key)
        if kernel is None:
            with self._lock:
                kernel = self._kernels.get(key)
                if kernel is None:
                    func = bind_eager(
                        self.source, self._compile_values(values), self.scalars, dict(zip(plan.const_names, consts))
                    )
                    run_passes(func)
                    stats.binds += 1
                    kernel = JITKernel(
                        func, target=self.options.get("target"), pass_configs=self.options.get("pass_configs")
                    )
                    self._kernels[key] = kernel
        return kernel, plan


# call keys remembered per function (T.dynamic sizes make one key per shape); calls of keys
# past it take ``_call``
_MAX_CALLS = 1024


def _keywords_key(kwargs: dict) -> tuple:
    """The keywords' part of a call key: per keyword its name, class and value (``1`` and
    ``True`` stay apart); the generated entry builds the same tuple inline."""
    return tuple([(k, v.__class__, v) for k, v in kwargs.items()])


def _key_source(fn: EagerFunction, n: int) -> str:
    """The call key of ``n`` positional arguments ``a0..``: per tensor its shape, per compile-time
    value (class, value), per run-time scalar None (the kernel checks its value; the entry keeps
    the key's length the arity, so a scalar given is never mistaken for its default)."""
    parts = []
    for i in range(n):
        if i in fn.scalar_index:
            parts.append("None")
        else:
            parts.append(f"a{i}.shape if a{i}.__class__ is Tensor else (a{i}.__class__, a{i})")
    return "(" + "".join(f"{p}, " for p in parts) + ")"


def _generate_entry(fn: EagerFunction) -> tuple[Callable, dict]:
    """``fn(*args)``: a call of remembered shapes and values goes straight to its kernel's launcher.

    One branch per arity served; the key is built inline, looked up in ``fn._calls``, and the
    kernel called with the arguments (or those its picker selects, defaults filled in).  A call
    with keywords looks up the arity's key and the keywords' (``_keywords_key``) in
    ``fn._keyword_calls``.  Also returns, per arity, the function computing the positional key
    (to remember a call under it).
    """
    env = {"Tensor": torch.Tensor, "calls": fn._calls, "keyword_calls": fn._keyword_calls, "slow": fn._call}
    lines = ["def entry(*args, **kwargs):", "    if not kwargs:", "        n = len(args)"]
    keys = {}
    arities = list(range(fn.n_positional, fn.n_min - 1, -1))  # all given first: the common call
    for n in range(fn.n_positional + 1):  # with keywords, any arity up to the positional parameters
        names = "".join(f"a{i}, " for i in range(n))
        keys[n] = f"def key{n}({names}):\n    return {_key_source(fn, n)}"
    for k, n in enumerate(arities):
        names = "".join(f"a{i}, " for i in range(n))
        key = _key_source(fn, n)
        lines += [
            f"        {'if' if k == 0 else 'elif'} n == {n}:",
            f"            {names}= args" if n else "            pass",
            "            try:",
            f"                hit = calls.get({key})",
            "            except TypeError:  # an unhashable compile-time value",
            "                hit = None",
            "            if hit is not None:",
            "                kernel, pick = hit",
            "                if pick is None:",
            f"                    return kernel._entry({names})",
            "                return kernel._entry(*pick(args))",
        ]
    lines += [
        "    elif keyword_calls:",
        "        try:",
        "            hit = keyword_calls.get((keys[len(args)](*args), tuple([(k, v.__class__, v) for k, v in kwargs.items()])))",
        "        except (KeyError, TypeError):  # more positional arguments than parameters; an unhashable value",
        "            hit = None",
        "        if hit is not None:",
        "            kernel, pick = hit",
        "            if pick is None:",
        "                return kernel._entry(*args)",
        "            return kernel._entry(*pick(args))",
        "    return slow(*args, **kwargs)",
    ]
    entry = exec_generated("\n".join(lines + list(keys.values())) + "\n", f"entry {fn.name}", env, "entry")
    env["keys"] = {n: env[f"key{n}"] for n in keys}
    return entry, env["keys"]


def _picker(inputs: tuple, n: int, defaults: list) -> Callable:
    """``args -> kernel inputs``: the arguments at ``inputs``, defaults for those not given."""
    env, parts = {}, []
    for i, default in zip(inputs, defaults):
        if i < n:
            parts.append(f"args[{i}]")
        else:
            env[f"d{i}"] = default
            parts.append(f"d{i}")
    return eval("lambda args: (" + "".join(f"{p}, " for p in parts) + ")", env)  # noqa: S307 - indices only


def _fmt_decl(shape) -> str:
    return "(" + ", ".join(_fmt_dim(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _fmt_dim(d) -> str:
    if isinstance(d, ir.VarRef):
        return d.var.name
    if isinstance(d, ir.Expr):
        try:
            return ast.unparse(ast.parse(repr(d)))
        except SyntaxError:
            return "?"
    return getattr(d, "name", str(d))


def _fmt_type(ttype: TensorType) -> str:
    return f"T.Tensor({_fmt_decl(ttype.shape)}, {ttype.dtype.name})"

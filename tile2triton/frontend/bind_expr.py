"""Bind, the expression half: the ``Binder``'s visitor of Python expressions (``ExprBinder``,
its base class).  Constants, names, arithmetic and comparisons fold at compile time where they
can; calls dispatch to the ``T.*`` rules, inline ``T.macro``s and plain helpers, or run host
Python.  ``bind.py`` holds the statements and the kernel's frame."""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import operator
import sys
import types

from .. import ir
from .. import language as T
from ..errors import LoweringCheckError, TileLangCompileError
from ..hints import is_hardware_refusal, unknown_T_name
from ..ir import BOOL, FLOAT32, INT32
from ..ir.exprs import (
    as_expr,
    binary_dtype,
    const_int,
    int_promoted,
    is_python_value,
    is_weak,
    static_difference,
    tvm_dtype,
)
from ..language.dtypes import DType, TypedLiteral, promote
from ..language.proxy import _TensorProxy
from . import vectors
from .packed import Vector, vector_dtype
from .rules import RULES
from .rules_base import DeclaredVar
from .rules_sync import BarrierArray
from .source import MacroSource

# tvm.tirx names that are TileLang T names too, refused as T refuses them
_TIR_AS_T = frozenset({"call_extern", "call_pure_extern", "call_intrin", "call_packed"})

_PY_BINOPS = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
    ast.Pow: ("**", operator.pow),
    ast.BitAnd: ("&", operator.and_),
    ast.BitOr: ("|", operator.or_),
    ast.BitXor: ("^", operator.xor),
    ast.LShift: ("<<", operator.lshift),
    ast.RShift: (">>", operator.rshift),
}


_PY_CMPS = {
    ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le),
    ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge),
    ast.Eq: ("==", operator.eq),
    ast.NotEq: ("!=", operator.ne),
}


# identity and membership tests run while TileLang builds the kernel, so they are Python's own,
# evaluated at compile time (`scale is None`, `dtype in [T.float16, T.int8]`)
_PY_HOST_CMPS = {
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


@functools.lru_cache(maxsize=1024)
def _signature(fn) -> inspect.Signature:
    return inspect.signature(fn)  # computed once per T.* primitive, not once per call site


class KernelReturn(Exception):
    """A ``return`` statement, carrying its value up to the function being bound or inlined."""

    def __init__(self, value):
        self.value = value


class ExprBinder:
    """The expression visitor of ``bind.Binder`` (its statements and state live there)."""

    def expr(self, node: ast.expr):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(f"Python '{type(node).__name__}' expressions are not supported in a TileLang kernel", node)
        return method(node)

    def expr_Constant(self, node: ast.Constant):
        return node.value

    def expr_Name(self, node: ast.Name):
        value = self.lookup(node.id, node)
        if isinstance(value, ElementRef):  # a T.Ref macro parameter: its element, read now
            return value.load
        if isinstance(value, ir.Buffer) and value.scope == ir.VAR:
            return ir.Load(value, (const_int(0),), self.loc(node))
        if vectors.is_vector_var(self, value):  # a T.alloc_var of a vector dtype: its vector
            return vectors.element(self, value, [])
        if isinstance(value, (T.Dynamic, T.SizeExpr)):  # a T.dynamic size (or an expression of them)
            return self.symbolic_size(value)  # used as a value: evaluated from its run-time size Vars
        return value

    def symbolic_size(self, value):
        """A host-side size expression (``T.dynamic`` sizes, ``M // 128``, ``T.ceildiv(M, 4)``) as TileIR."""
        if isinstance(value, T.Dynamic):
            return ir.VarRef(self.size_var(value))
        if not isinstance(value, T.SizeExpr):
            return value
        a, b = as_expr(self.symbolic_size(value.lhs)), as_expr(self.symbolic_size(value.rhs))
        dtype = binary_dtype("+", a, b)
        if value.op in ("max", "min"):
            return ir.Call(value.op, (a, b), dtype)
        if value.op == "ceildiv":
            return ir.BinOp("//", ir.BinOp("-", ir.BinOp("+", a, b, dtype), const_int(1), dtype), b, dtype)
        return ir.BinOp(value.op, a, b, dtype)

    def expr_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    def expr_List(self, node):
        return [self.expr(e) for e in node.elts]

    def expr_Dict(self, node):
        return {self.expr(k): self.expr(v) for k, v in zip(node.keys, node.values)}

    # comprehensions run at compile time over compile-time iterables; their elements may be
    # kernel values (``sum(A[k, i] * w for k, w in enumerate(weights))``)
    def expr_ListComp(self, node: ast.ListComp):
        return self.comprehension(node, lambda: self.expr(node.elt))

    def expr_GeneratorExp(self, node: ast.GeneratorExp):
        return self.comprehension(node, lambda: self.expr(node.elt))  # a list: sum/max/tuple take it

    def expr_SetComp(self, node: ast.SetComp):
        return set(self.comprehension(node, lambda: self.expr(node.elt)))

    def expr_DictComp(self, node: ast.DictComp):
        return dict(self.comprehension(node, lambda: (self.expr(node.key), self.expr(node.value))))

    def comprehension(self, node, element) -> list:
        results = []

        def run(generators):
            if not generators:
                results.append(element())
                return
            gen = generators[0]
            if gen.is_async:
                raise self.error("async comprehensions are not supported", gen)
            iterable = self.expr(gen.iter)
            if isinstance(iterable, (ir.Expr, ir.Buffer, ir.Region)) or not hasattr(iterable, "__iter__"):
                raise self.error("a comprehension in a kernel iterates over compile-time values", gen.iter)
            for value in iterable:
                self.bind_pattern(gen.target, value, gen)
                conditions = [self.expr(c) for c in gen.ifs]
                if not all(is_python_value(c) for c in conditions):
                    raise self.error("a comprehension's 'if' must be a compile-time condition", gen.ifs[0])
                if all(conditions):
                    run(generators[1:])

        self.scopes.append({})  # the comprehension's variables do not leak, as in Python
        try:
            run(node.generators)
        finally:
            self.scopes.pop()
        return results

    def bind_pattern(self, target, value, node) -> None:
        """Bind a comprehension target (a name or a nested tuple of names) to a compile-time value."""
        if isinstance(target, ast.Name):
            self.bind_name(target.id, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = list(value) if isinstance(value, (list, tuple)) else None
            if items is None or len(items) != len(target.elts):
                raise self.error("cannot unpack this value into the names on the left", node)
            for t, v in zip(target.elts, items):
                self.bind_pattern(t, v, node)
        else:
            raise self.error("a comprehension target must be a name or a tuple of names", target)

    def expr_Attribute(self, node: ast.Attribute):
        base = self.expr(node.value)
        if isinstance(base, ir.Buffer):
            if node.attr == "shape":
                return tuple(base.shape)
            if node.attr == "dtype":
                return base.dtype
            if node.attr == "ndim":
                return base.ndim
            if node.attr == "data":  # for T.Tensor views (global) and T.tvm_access_ptr
                return _BufferData(base)
            raise self.error(f"buffers have no attribute '{node.attr}'", node)
        if isinstance(base, ir.Expr):
            if node.attr == "astype":
                return _Method("astype", base)
            if node.attr == "dtype":
                return base.dtype
            raise self.error(f"kernel values have no attribute '{node.attr}'", node)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            if base is T or getattr(base, "__name__", "") == "tile2triton.language":
                message, hint = unknown_T_name(node.attr, [n for n in dir(T) if not n.startswith("_")])
                if is_hardware_refusal(node.attr):
                    raise LoweringCheckError(message, self.loc(node), hint) from None
                raise self.error(message, node, hint) from None
            if getattr(base, "__name__", "") == "tile2triton.tvm.tirx" and node.attr in _TIR_AS_T:
                message, hint = unknown_T_name(node.attr, ())  # tirx.call_extern is T.call_extern
                raise self.error(message.replace("T.", "tirx.", 1), node, hint) from None
            raise self.error(f"{base!r} has no attribute '{node.attr}'", node) from None

    def expr_Subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if isinstance(base, BarrierArray):
            return base[self.expr(node.slice)]
        if not isinstance(base, ir.Buffer):
            if isinstance(base, ir.Region):
                raise self.error("indexing a sliced region is not supported; index the buffer", node)
            key = self.expr(node.slice)
            if not is_python_value(key):
                raise self.error("only buffers can be indexed with kernel values", node)
            return base[key]
        vector = vectors.info(self, base)  # a buffer of a vector dtype: indexed without its lane axis
        if len(items) != base.ndim - (vector is not None):
            raise self.error(
                f"buffer '{base.name}' is {base.ndim - (vector is not None)}-dimensional but {len(items)} "
                "index(es) were given",
                node,
            )
        starts, extents, sliced = [], [], False
        for d, item in enumerate(items):
            if isinstance(item, ast.Slice):
                sliced = True
                if item.step is not None:
                    raise self.error("strided slices are not supported", item)
                lo = self.expr(item.lower) if item.lower is not None else 0
                hi = self.expr(item.upper) if item.upper is not None else base.shape[d]
                starts.append(as_expr(lo))
                ext = self.binop("-", operator.sub, hi, lo, item)
                extents.append(ext if is_python_value(ext) else self.simplify_extent(ext, item))
            else:
                index = self.expr(item)  # a vector index (T.Ramp): one element per lane
                starts.append(index if isinstance(index, Vector) else as_expr(index, self.loc(item)))
                extents.append(1)
        if any(isinstance(x, Vector) for x in starts):
            return vectors.gather(self, base, starts, sliced, node)
        if vector is not None:
            return vectors.subscript(self, base, starts, extents, sliced, node)
        if sliced:
            return ir.Region(base, tuple(starts), tuple(extents))
        if base in getattr(self, "reducers", ()):
            self.epochs.log(self, base, "read", self.loc(node))  # a read, unless an update's target
        return ir.Load(base, tuple(starts), self.loc(node))

    def expr_Slice(self, node: ast.Slice):
        """``sizes[:k]`` of a compile-time sequence: a Python slice (buffers read their slices above)."""
        parts = [None if p is None else self.expr(p) for p in (node.lower, node.upper, node.step)]
        if not all(is_python_value(p) for p in parts):
            raise self.error("a slice of a compile-time sequence needs compile-time bounds", node)
        return slice(*parts)

    def simplify_extent(self, ext: ir.Expr, node):
        """``x + n - x`` -> ``n``: slice extents like ``A[off : off + BLOCK]`` are static."""
        value = static_difference(ext)
        return value if value is not None else ext

    def expr_BinOp(self, node: ast.BinOp):
        op, pyop = _PY_BINOPS[type(node.op)]
        return self.binop(op, pyop, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op, pyop, a, b, node):
        a, b = self.symbolic_size(a), self.symbolic_size(b)  # a T.dynamic size reached through a tuple
        if isinstance(a, Vector) or isinstance(b, Vector):  # lane by lane
            return vectors.binop(self, op, pyop, a, b, node)
        if (
            is_python_value(a)
            and is_python_value(b)
            and not isinstance(a, TypedLiteral)
            and not isinstance(b, TypedLiteral)
        ):
            try:
                return pyop(a, b)
            except Exception as exc:  # noqa: BLE001
                raise self.error(f"cannot compute {a!r} {op} {b!r}: {exc}", node) from None
        if isinstance(a, (ir.Buffer, ir.Region)) or isinstance(b, (ir.Buffer, ir.Region)):
            raise self.error("arithmetic on whole buffers is not TileLang; index them inside T.Parallel", node)
        a, b = as_expr(a, self.loc(node)), as_expr(b, self.loc(node))
        if "ptr" in (a.dtype.kind, b.dtype.kind):
            raise self.error(
                "a T.ptr parameter is an address, not a number: arithmetic on it is not TileLang", node,
                "read the memory through T.make_tensor(p, shape, dtype) and index that tensor",
            )  # fmt: skip
        dtype = binary_dtype(op, a, b)
        if op == "**":
            return ir.Call("pow", (a, b), dtype if dtype.is_float else FLOAT32)
        return ir.BinOp(op, a, b, dtype)

    def expr_UnaryOp(self, node: ast.UnaryOp):
        v = self.expr(node.operand)
        if is_python_value(v) and not isinstance(v, Vector):
            return (
                {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_, ast.Invert: operator.invert}[
                    type(node.op)
                ](v)
                if not isinstance(v, TypedLiteral)
                else TypedLiteral(v.dtype, -v.value)
            )
        if isinstance(node.op, ast.UAdd):
            return v
        op = {ast.USub: "-", ast.Not: "not", ast.Invert: "~"}[type(node.op)]
        if isinstance(v, Vector):
            return vectors.unary(self, op, v)
        v = as_expr(v)
        if op == "-":
            v = int_promoted(v)
        return ir.UnaryOp(op, v, BOOL if op == "not" else v.dtype)

    def expr_BoolOp(self, node: ast.BoolOp):
        op = "and" if isinstance(node.op, ast.And) else "or"
        values = [self.expr(v) for v in node.values]
        if all(is_python_value(v) for v in values):
            result = values[0]
            for v in values[1:]:
                result = (result and v) if op == "and" else (result or v)
            return result
        result = as_expr(values[0])
        for v in values[1:]:
            result = ir.BinOp(op, result, as_expr(v), BOOL)
        return result

    def expr_Compare(self, node: ast.Compare):
        left = self.expr(node.left)
        result = None
        for op_node, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            if type(op_node) in _PY_HOST_CMPS:
                part = self.host_compare(op_node, left, right, node)
                result = part if result is None else self.binop("and", lambda x, y: x and y, result, part, node)
                left = right
                continue
            op, pyop = _PY_CMPS[type(op_node)]
            if isinstance(left, Vector) or isinstance(right, Vector):
                part = vectors.compare(self, op, left, right, node)
            elif is_python_value(left) and is_python_value(right):
                part = pyop(left, right)
            else:
                part = ir.Compare(op, as_expr(left), as_expr(right), BOOL)
            result = part if result is None else self.binop("and", lambda x, y: x and y, result, part, node)
            left = right
        return result

    def host_compare(self, op_node, left, right, node):
        """``is``/``in`` on compile-time values; identity of a kernel value is known too (it is not None)."""
        is_identity = isinstance(op_node, (ast.Is, ast.IsNot))
        if not is_identity and not all(is_python_value(v) for v in _flat((left, right))):
            raise self.error("'in' comparisons are not supported on kernel values", node)
        try:
            return _PY_HOST_CMPS[type(op_node)](left, right)
        except Exception as exc:  # noqa: BLE001
            raise self.error(f"cannot evaluate this comparison at compile time: {exc}", node) from None

    def expr_IfExp(self, node: ast.IfExp):
        cond = self.expr(node.test)
        if is_python_value(cond):
            return self.expr(node.body) if cond else self.expr(node.orelse)
        return self.select(cond, self.expr(node.body), self.expr(node.orelse))

    def select(self, cond, a, b):
        a, b = as_expr(a), as_expr(b)
        dtype = binary_dtype("select", a, b)
        if not (is_weak(a) or is_weak(b)):
            # two narrow integers select in TVM's narrow type, computed or not: `signed char condval =
            # A[i] + A[i];` truncates (beside a Python int, TVM's select is int32: `int condval`)
            ta, tb = tvm_dtype(a), tvm_dtype(b)
            narrow = promote(ta, tb)
            if narrow != dtype and narrow.is_int and ta.kind == tb.kind:
                a, b = (x if x.dtype == narrow else ir.Cast(x, narrow) for x in (a, b))
                dtype = narrow
        return ir.Select(as_expr(cond), a, b, dtype)

    def expr_Lambda(self, node: ast.Lambda):
        # lambdas appear in layout annotations (T.Fragment(..., forward_thread_fn=lambda i: ...)),
        # which have no effect under Triton: keep them as opaque compile-time values
        return _Opaque("lambda", self.loc(node))

    def expr_JoinedStr(self, node):
        return "".join(str(self.expr(v)) for v in node.values)

    def expr_FormattedValue(self, node):
        return format(self.expr(node.value))

    def expr_Call(self, node: ast.Call):
        fn = self.expr(node.func)
        if isinstance(fn, _Method):
            args, _ = self.call_values(node)
            return ir.Cast(fn.target, self.dtype_arg(args[0], node))
        tag = getattr(fn, "__t2t__", None)
        if tag is not None:
            rule = RULES.get(tag)
            if rule is None:
                raise self.error(f"T.{tag} is not supported by tile2triton yet", node)
            args = self.call_args(fn, node)
            if getattr(fn, "__wrapped__", None) is None and all(
                is_python_value(v) and not isinstance(v, TypedLiteral) for v in _flat(args.values())
            ):
                try:
                    return fn(**args)  # host-capable primitive on plain numbers
                except (ValueError, TypeError, NotImplementedError) as exc:  # bad or unsupported arguments
                    raise self.error(str(exc), node) from None
            return rule(self, node, args)
        if isinstance(fn, DType) and vector_dtype(fn) is not None:  # T.float16x2(a, b)
            return vectors.construct(self, fn, self.call_values(node)[0], node)
        if isinstance(fn, DType) and not node.args and not node.keywords and self.kernel is not None:
            return DeclaredVar(ir.Var(self.fresh_name("v"), fn, "let"))  # bound later by T.let
        if isinstance(fn, DType):
            value = self.expr(node.args[0]) if node.args else 0
            if is_python_value(value):
                return TypedLiteral(fn, value)
            return ir.Cast(as_expr(value), fn)
        if isinstance(fn, MacroSource):
            return self.inline_macro(fn, node)
        if isinstance(fn, _TensorProxy):
            view = self.tensor_view(fn, node)
            if view is not None:
                return view
        args, kwargs = self.call_values(node)
        if fn is builtins.eval and len(args) == 1 and not kwargs and isinstance(args[0], str):
            return self.eval_text(args[0], node)
        if fn in (builtins.max, builtins.min, builtins.sum):
            folded = self.fold_builtin(fn, args, kwargs, node)
            if folded is not None:
                return folded
        if fn in (builtins.float, builtins.int) and args and not is_python_value(args[0]):
            return ir.Cast(as_expr(args[0]), FLOAT32 if fn is builtins.float else INT32)
        if fn is builtins.abs and args and not is_python_value(args[0]):
            return RULES["abs"](self, node, {"x": args[0]})
        if not callable(fn):
            raise self.error(f"{fn!r} is not callable", node)
        helper = _python_helper(fn)
        if helper is not None and not all(is_python_value(v) for v in _flat(list(args) + list(kwargs.values()))):
            # a plain function handed kernel values: TileLang runs it while building the kernel,
            # so its body is kernel code, inlined here the way a T.macro is
            return self.inline_macro(helper, node, args, kwargs, plain=True)
        # plain Python (helpers computing constants, layout annotations) runs at compile time
        try:
            return fn(*args, **kwargs)
        except T.KernelOnlyError:
            if helper is None:
                raise self.error(
                    f"{getattr(fn, '__name__', fn)!r} uses T.* primitives and its source is not available", node
                ) from None
            return self.inline_macro(helper, node, args, kwargs, plain=True)  # it opens T.* constructs itself
        except Exception as exc:  # noqa: BLE001
            if all(is_python_value(a) for a in list(args) + list(kwargs.values())):
                raise self.error(
                    f"calling {getattr(fn, '__name__', fn)!r} at compile time failed: {exc}", node
                ) from None
            raise self.error(
                f"cannot call {getattr(fn, '__name__', fn)!r} on kernel values inside a kernel "
                "(use a @T.macro for reusable kernel code)",
                node,
            ) from None

    def tensor_view(self, proxy, node: ast.Call):
        """``T.Tensor(shape, dtype, A.data)`` in a kernel: another shape over A's memory (e.g. a 4-D
        weight seen as a 2-D matrix).  None for a plain ``T.Tensor(...)`` annotation value."""
        args, kwargs = self.call_values(node)
        bound = _signature(type(proxy).__call__).bind(proxy, *args, **kwargs)
        data = bound.arguments.get("data")
        if not isinstance(data, _BufferData):
            return None
        ttype = proxy(bound.arguments["shape"], bound.arguments.get("dtype", "float32"))
        base = data.buffer
        if base.scope != ir.GLOBAL:
            raise self.error(f"T.Tensor views a global tensor's memory; {base.name} is a {base.scope} buffer", node)
        view = self.global_buffer(self.fresh_name(f"{base.name}_view"), ttype, self.loc(node))
        view.alias_of = base
        return view

    def call_values(self, node: ast.Call) -> tuple[list, dict]:
        """The call's positional and keyword values, ``*xs`` and ``**opts`` unpacked."""
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                values = self.expr(a.value)
                if not isinstance(values, (list, tuple, range, dict)):
                    raise self.error("only compile-time sequences can be unpacked with '*'", a)
                args.extend(values)
            else:
                args.append(self.expr(a))
        kwargs = {}
        for k in node.keywords:
            value = self.expr(k.value)
            if k.arg is not None:
                kwargs[k.arg] = value
            elif isinstance(value, dict):
                kwargs.update(value)
            else:
                raise self.error("only compile-time dicts can be unpacked with '**'", k.value)
        return args, kwargs

    def eval_text(self, text: str, node: ast.Call):
        """``eval("r[0] / N")``: TileLang runs a kernel's body as Python, so the text is an expression of the
        kernel's names, bound here as if written in place of the call (errors at the call's line)."""
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise self.error(f"eval of {text!r}: {exc.msg}", node) from None
        for sub in ast.walk(tree):
            ast.copy_location(sub, node)
            sub.end_lineno, sub.end_col_offset = node.end_lineno, node.end_col_offset
        return self.expr(tree.body)

    def fold_builtin(self, fn, args: list, kwargs: dict, node):
        """``max``/``min``/``sum`` over kernel values (two arguments, or one compile-time sequence,
        as a generator expression gives): folded pairwise.  None when Python can compute it."""
        if fn is builtins.sum:
            values = list(args[0]) if args and isinstance(args[0], (list, tuple)) else None
            if not values or all(is_python_value(v) for v in _flat(values)):
                return None
            start = args[1] if len(args) > 1 else kwargs.get("start", 0)
            total = values[0]
            if not (is_python_value(start) and start == 0):
                total = self.binop("+", operator.add, start, total, node)
            for v in values[1:]:
                total = self.binop("+", operator.add, total, v, node)
            return total
        values = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
        if all(is_python_value(v) for v in _flat(values)) or kwargs:
            return None
        if not values:
            raise self.error(f"{fn.__name__}() of an empty sequence", node)
        rule = RULES["max" if fn is builtins.max else "min"]
        result = values[0]
        for v in values[1:]:
            result = rule(self, node, {"a": result, "b": v})
        return result

    def call_args(self, fn, node: ast.Call) -> dict:
        args, kwargs = self.call_values(node)
        sig = _signature(getattr(fn, "__wrapped__", fn))
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(f"T.{fn.__t2t__}{sig}: {exc}", node) from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def inline_macro(self, macro: MacroSource, node: ast.Call, args=None, kwargs=None, plain: bool = False):
        """A ``T.macro`` (or a ``plain`` Python helper handed kernel values) called in a kernel: its
        body bound in place, its parameters bound to the call's values. TileLang runs a plain helper
        as Python, so its ``for d in range(3)`` unrolls (``stmt_For``); a macro's is a serial loop."""
        if args is None:
            args, kwargs = self.call_values(node)
        sig = _signature(macro.func)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(f"{macro.name}{sig}: {exc}", node) from None
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        for name, param in sig.parameters.items():
            if name in arguments and not plain and _is_reference(param.annotation, macro.func):
                arguments[name] = self.reference(arguments[name], name, node)
        saved_source, saved_file = self.source, self.file
        self.source, self.file = macro, macro.file
        self.scopes.append(arguments)
        self.inlined_calls += 1
        saved_base, self.frame_base = self.frame_base, len(self.scopes) - 1
        saved_plain, self.in_plain_helper = self.in_plain_helper, plain
        try:
            for s in macro.tree.body:
                self.stmt(s)
        except KernelReturn as ret:
            return ret.value
        finally:
            self.inlined_calls -= 1
            self.frame_base = saved_base
            self.in_plain_helper = saved_plain
            self.scopes.pop()
            self.source, self.file = saved_source, saved_file
        return None

    def reference(self, value, name: str, node):
        """A ``T.Ref`` macro argument, as TileLang's ``macro_arg`` takes it: a ``T.alloc_var`` is the variable
        itself, a buffer element an ``ElementRef`` whose indices are bound now (the call's element, whatever
        the macro assigns later), a region or buffer itself."""
        if isinstance(value, ir.Load) and value.buffer.scope == ir.VAR:
            return value.buffer
        if isinstance(value, ir.Load):
            return ElementRef(ir.Load(value.buffer, tuple(self.bound_index(i, node) for i in value.indices), value.loc))
        if isinstance(value, (ir.Region, ir.Buffer)):
            return value
        raise self.error(
            f"T.Ref parameter '{name}' takes a buffer element (A[i]) or a T.alloc_var, got {_kind_of(value)}", node
        )

    def bound_index(self, index, node):
        if is_python_value(index) or isinstance(index, ir.Const):
            return index
        var = ir.Var(self.fresh_name("ref_index"), index.dtype, "let")
        self.emit(ir.Let(self.loc(node), var, index))
        return ir.VarRef(var)


class ElementRef:
    """A ``T.Ref`` macro parameter bound to a buffer element: reading the name loads the element,
    assigning it stores there (bind.py's ``assign_name``, ``stmt_AugAssign``)."""

    def __init__(self, load: ir.Load):
        self.load = load


def _is_reference(annotation, func) -> bool:
    """Is a macro parameter annotated ``T.Ref`` (or ``T.Var``, TileLang's deprecated spelling of it)?"""
    if isinstance(annotation, str):  # `from __future__ import annotations`
        try:
            annotation = eval(annotation, getattr(func, "__globals__", {}))  # noqa: S307 - the user's own annotation
        except Exception:  # noqa: BLE001 - an annotation that names something else
            return False
    return annotation is T.Ref or annotation is T.Var


def _kind_of(value) -> str:
    if is_python_value(value):
        return f"the Python value {value!r}"
    return "an expression" if isinstance(value, ir.Expr) else type(value).__name__


_NOT_KERNEL_CODE = {"tile2triton", "tilelang", "numpy", "torch", "triton", "tvm"}


_HELPERS: dict = {}  # plain function -> its MacroSource (None: not inlinable)


def _python_helper(fn) -> MacroSource | None:
    """A user's plain Python function (its source readable), to inline when handed kernel values."""
    if not isinstance(fn, types.FunctionType):
        return None
    package = (fn.__module__ or "").split(".")[0]
    if package in _NOT_KERNEL_CODE or package in sys.stdlib_module_names:
        return None  # library functions: called as Python (and failing clearly on kernel values)
    if fn not in _HELPERS:
        try:
            _HELPERS[fn] = MacroSource.from_function(fn)
        except Exception:  # noqa: BLE001  (no source: a builtin-like or generated function)
            _HELPERS[fn] = None
    return _HELPERS[fn]


class _Opaque:
    """A compile-time value tile2triton carries but never evaluates (a layout function)."""

    def __init__(self, what: str, loc):
        self.what, self.loc = what, loc

    def __call__(self, *args, **kwargs):
        raise TileLangCompileError(f"a {self.what} can only be used in a layout annotation", self.loc)


class _BufferData:
    """``A.data``: the memory of global tensor A, for ``T.Tensor(shape, dtype, A.data)`` views."""

    def __init__(self, buffer):
        self.buffer = buffer


class _Method:
    def __init__(self, name, target):
        self.name, self.target = name, target


def _flat(values):
    for v in values:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        elif isinstance(v, Vector):  # its lanes (kernel values)
            yield from _flat(v.lanes)
        else:
            yield v

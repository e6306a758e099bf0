"""Keep Triton's interpreter and its compiler usable in one process.

Triton's standard library (``tl.zeros``, ``tl.sum``, ``tl.max``, ``tl.cumsum``, ``tl.sigmoid``,
...) is written with ``@triton.jit``, which picks its flavour once, when ``triton.language`` is
imported: a ``JITFunction`` (callable only by the compiler) or, if ``TRITON_INTERPRET`` was set
then, an ``InterpretedFunction``.  Whichever it picked, the other mode then fails in that process
("Cannot call @triton.jit'd outside of the scope of a kernel" under the interpreter;
"'ir.value' object has no attribute 'dtype'" when compiling).  tile2triton runs CPU tensors through
the interpreter and CUDA tensors through the compiler, so it switches those library functions to
the flavour of the launch at hand, and back.
"""

from __future__ import annotations

import threading

_lock = threading.RLock()
_variants: dict = {}  # raw function -> (JITFunction, InterpretedFunction)


def _namespaces():
    import triton.language as tl

    spaces = [tl, tl.tensor]
    for name in ("standard", "random"):
        module = getattr(tl, name, None)
        if module is not None:
            spaces.append(module)
    return spaces


def _pair(value):
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    fn = value.fn
    if fn not in _variants:
        if isinstance(value, JITFunction):
            _variants[fn] = (value, InterpretedFunction(fn))
        else:
            _variants[fn] = (JITFunction(fn), value)
    return _variants[fn]


def _library_interpreted() -> bool | None:
    """The flavour the library has now, read off one of its functions (None: cannot tell)."""
    import triton.language as tl

    kind = type(getattr(tl, "sigmoid", None)).__name__
    return {"InterpretedFunction": True, "JITFunction": False}.get(kind)


_interpreter_mended = False


def _mend_interpreter() -> None:
    """Once per process, before the first interpreted launch: the interpreter fixes below."""
    global _interpreter_mended
    if _interpreter_mended:
        return
    _gluon_imported_unpatched()
    _index_one_element_tensors()
    _device_calls_restore_the_language()
    _interpreter_mended = True


def _index_one_element_tensors() -> None:
    """Triton 3.6's interpreter turns a scalar into an int (``range(0, n)`` with ``n`` computed from
    ``tl.program_id``) by ``int(array)``, on a one-element 1-D array, which NumPy 2 refuses; Triton
    3.9 squeezes the array first.  Do that on older versions too."""
    from triton.runtime import interpreter as ti

    patch = getattr(ti, "_patch_lang_tensor", None)
    if patch is not None:

        def patch_lang_tensor(tensor, scope):
            patch(tensor, scope)
            scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

        ti._patch_lang_tensor = patch_lang_tensor


def _device_calls_restore_the_language() -> None:
    """Triton's interpreter (3.6 to 3.9 at least) patches ``triton.language`` for each call of a
    ``@triton.jit`` helper from a kernel and never restores it: afterwards, in the same process,
    Gluon compiles for the GPU run into the interpreter's builder (``'InterpreterBuilder' object has
    no attribute 'get_slice_layout'``).  Restore the helper's patches when it returns, as the
    kernel launch does for its own."""
    from triton.runtime import interpreter as ti

    cls = getattr(ti, "InterpretedFunction", None)
    if cls is None or not hasattr(ti, "_LangPatchScope"):
        return

    def call(self, *args, **kwargs):
        scope = ti._patch_lang(self.fn)
        fn = self.rewrite()
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise ti.InterpreterError(repr(e)) from e
        finally:
            if scope is not None:
                scope.restore()

    cls.__call__ = call


def _gluon_imported_unpatched() -> None:
    """Triton's interpreter imports Gluon lazily, from inside a launch, while it has
    ``triton.language`` patched, and Gluon keeps the patched functions: every later sm_90 compile
    of a Gluon kernel in the process fails. Import it before the first interpreted launch."""
    import importlib.util

    if importlib.util.find_spec("triton.experimental.gluon") is not None:
        import triton.experimental.gluon.language  # noqa: F401


def use_library(interpret: bool) -> None:
    """Make every Triton standard-library function the flavour for ``interpret``."""
    if interpret:
        _mend_interpreter()
    if _library_interpreted() is interpret:  # nothing to switch (and no interpreter to import)
        return
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    with _lock:
        for space in _namespaces():
            for name, value in list(vars(space).items()):
                if isinstance(value, (JITFunction, InterpretedFunction)) and hasattr(value, "fn"):
                    wanted = _pair(value)[1 if interpret else 0]
                    if value is not wanted:
                        setattr(space, name, wanted)

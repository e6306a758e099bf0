"""Where the surfaces plug into the stages below them, in one place.

A lower stage that needs something a higher one provides declares a class attribute for it (the
arrow of imports stays pointing down); this module, imported by the package's ``__init__``, fills
them in. The registrations a stage makes on a lower stage's registry are listed too.

| hook (declared in) | filled with (from) | used for |
|---|---|---|
| ``KernelSource.binder`` (frontend/source.py) | ``bind_kernel_source`` (compiler.py) | ``prim_func.attrs``, ``get_tir`` |
| ``JITKernel.bind_prim_func`` (runtime/kernel.py) | ``compile_prim_func`` (compiler.py) | ``JITKernel(prim_func, out_idx)`` |
| ``JITKernel.profiler_class`` (runtime/kernel.py) | ``Profiler`` (profiler.py) | ``kernel.get_profiler()`` |

Registrations made where the registering module is defined (a plug-in over a lower registry):
``language._sources.register_reader`` (frontend/source.py: ``@T.prim_func`` / ``@T.macro`` readers),
``KernelSource.definition_checks`` (frontend/rules_atomic.py), ``language._primitive._host_call_class``
(tvm/tirx.py: ``T.call_*`` outside a kernel), and the rule registries ``frontend.rules_base.RULES``,
``codegen.rules_base.LOWERINGS`` and ``codegen.routes.ROUTES``.
"""

from __future__ import annotations

from .compiler import bind_kernel_source, compile_prim_func
from .frontend.source import KernelSource
from .profiler import Profiler
from .runtime.kernel import JITKernel


def connect() -> None:
    KernelSource.binder = bind_kernel_source
    JITKernel.bind_prim_func = staticmethod(compile_prim_func)
    JITKernel.profiler_class = Profiler


connect()

"""``tvm.transform.PassContext``: holds TVM pass options.  Triton compiles tile2triton's output, so
the options have no effect; the context is accepted so ``with PassContext(config=...):`` runs."""

from __future__ import annotations


class PassContext:
    _stack: list = []

    def __init__(self, opt_level=2, required_pass=None, disabled_pass=None, instruments=None, config=None,
                 trace=None, trace_stack=None, make_traceable=None, num_evals=0, tuning_api_database=None):  # fmt: skip
        self.opt_level = opt_level
        self.required_pass = list(required_pass or [])
        self.disabled_pass = list(disabled_pass or [])
        self.instruments = list(instruments or [])
        self.config = dict(config or {})

    def __enter__(self):
        PassContext._stack.append(self)
        return self

    def __exit__(self, *exc):
        PassContext._stack.pop()

    @staticmethod
    def current() -> PassContext:
        return PassContext._stack[-1] if PassContext._stack else PassContext()

    @staticmethod
    def list_configs() -> dict:
        from ..config import PassConfigKey

        return {key.value: {"type": "object"} for key in PassConfigKey}


__all__ = ["PassContext"]

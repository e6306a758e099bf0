from . import mma_macro_generator, wgmma_macro_generator

__all__ = ["mma_macro_generator", "wgmma_macro_generator"]

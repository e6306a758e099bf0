"""Run: the generated-source cache, the compiled-kernel object and its launcher."""

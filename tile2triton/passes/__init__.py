"""Checks and rewrites on TileIR, run between bind and lower."""

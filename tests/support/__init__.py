"""Test support: seeded data generators, hypothesis strategies, the conformance cases and matrix, and the
both-ways crosscheck against pylance (which they import: they are not library code)."""

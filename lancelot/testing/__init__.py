"""Test helpers shipped with the package: seeded data generators and hypothesis strategies."""

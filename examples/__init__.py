"""Examples that use lancelot from a source checkout (not part of the installed package)."""

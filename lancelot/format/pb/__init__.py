"""Modules generated from ../protos by scripts/gen_protos.sh (do not edit)."""

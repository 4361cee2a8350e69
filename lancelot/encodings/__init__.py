"""Encodings: 2.0 array encodings (v2_0/) and 2.1+ structural layouts (structural/)
with their compression techniques (compression/)."""

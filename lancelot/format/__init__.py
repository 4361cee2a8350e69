"""The Lance container: footer, offset tables, column metadata, global buffers."""

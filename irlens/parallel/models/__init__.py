"""The decoders the parallel path trains, one folder each (llama3, deepseek_v3 built on it), and
their families by `<family>:<preset>` (families.py)."""

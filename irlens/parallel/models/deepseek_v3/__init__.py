"""DeepSeek-V3-style mixture of experts for the parallel path: llama3's decoder with routed experts (model.py)."""

"""The joint-graph parallel training path (`irlens train`, `irlens dump --frontend joint`): the
decoders it trains (llama3, deepseek_v3 on it, both built from irlens.workloads.builtin.common's layers),
their parallelisms (SimpleFSDP, tensor and sequence parallelism, expert parallelism), the capture
of a train step's joint forward+backward graph with the passes run on it, and the training loop,
its metrics and profile. A run is one typed TrainConfig of parts (config.py), built by irlens.cli from the
command line: nothing here parses flags, and the ranks a run spawns get the dataclass itself.
"""

"""GraphNet's corpus through irlens (docs/graphnet.md): the samples selected and run (corpus),
GraphNet's S(t) and ES(t) scores (score), the page (page). A single sample is a workload like any
other: `graphnet:PATH` (irlens.workloads.graphnet)."""

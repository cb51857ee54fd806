"""`irlens bench`: the matrix timed on a GPU beside measured ceilings (run), its document after every
row (checkpoint), the ceilings kept per GPU, driver and software (ceilings_cache), and Nsight
Compute's counters beside the model (ncu). The ceilings' model (irlens.ceilings) and the run's
progress and time (irlens.bench_progress, irlens.bench_time) stay below: the reports read them."""

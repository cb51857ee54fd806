"""`irlens bench`: the matrix timed on a GPU beside measured ceilings (run), its document after every
row (checkpoint), the ceilings measured (sweep) and kept per GPU, driver and software (ceilings_cache),
its progress on stderr (progress), where its time went (timeline), the compilers' persistent caches it
reuses from run to run (compile_caches), and Nsight Compute's counters beside the model (ncu). What
the reports read stays where they can import it: the ceilings' record (irlens.core.ceilings) and the
time spans read back (irlens.reporting.time_spent)."""

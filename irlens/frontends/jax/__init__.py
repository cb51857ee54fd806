"""The JAX frontend (frontend.py) and its adapters of jaxprs, StableHLO and optimized HLO to the common view."""

"""A user's project: reprokit.toml (its kernels, declared "call" cases, stacks and GPU profiles
of its own), found from the current folder up or named by --project; `reprokit init` writes a
starter, `reprokit check` reports every problem in it, and run/capture plan its cases
(docs/user-cases.md is the contract)."""

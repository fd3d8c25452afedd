"""Z3 proofs that the group protocol's invariants are inductive for any number of members and
generations (`kgc prove`): model.py (state signature), transitions.py (one transition per
action), invariants.py, prove.py (checks and counterexamples), abstraction.py (impl -> model)."""

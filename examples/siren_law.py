"""SIREN on shipped data: the fresh-data score of "tune a prompt at this budget, then deploy it", with intervals
that account for the search, against the usual (optimistic) report. Run: python examples/siren_law.py"""

import assay
from assay.datasets import load_siren_law

res = assay.siren.evaluate(load_siren_law(), temperature=0.1, contrasts=["tuned-vs-default"], seed=0)

print(f"{res.n} {res.n_meaning}; {res.confidence:.0%} intervals")
cells = res.table[["system", "budget", "estimate", "ci_low", "ci_high", "naive_max", "optimism"]]
print(cells.round(4).to_string(index=False))

# the contrasts a reader may scan: trust the simultaneous verdict
gains = res.contrasts[["contrast", "estimate", "simultaneous_low", "simultaneous_high", "verdict_simultaneous"]]
print(gains.round(4).to_string(index=False))
for w in res.warnings:
    print("warning:", w)

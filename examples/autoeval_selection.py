"""R-AutoEval+: certify which quantized models keep their error below 10% from 400 human labels and 2,000 judge
labels each, and pick the cheapest certified one (family-wise error <= 0.1). The data are simulated (no licensed
real data ships for this method). Run: python examples/autoeval_selection.py"""

from assay import autoeval
from assay.datasets import synthetic_autoeval

table = synthetic_autoeval(0)  # candidate, item, loss_human (NaN: judge only), loss_judge, memory_gb
res = autoeval.certify(table, risk_target=0.1, delta=0.1, select="fst", order_by="memory_gb",
                       cost_col="memory_gb", interval=True, seed=0)

cols = ["candidate", "n", "N", "certified", "certified_at", "risk_upper", "ci_low", "ci_high", "rho_weighted", "cost"]
print(res.table[cols].round(4).to_string(index=False))
sel = res.info["selection"]
print(f"{sel['procedure']}: certified {sel['certified']}; cheapest certified: {sel['best']}")
print("guarantee:", res.level["meaning"])

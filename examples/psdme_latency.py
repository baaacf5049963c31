"""PS-DME on shipped LLMPerf latencies: keep the 5 endpoints with the lowest mean time to first token, then state
what each guarantees at 80-95% reliability, valid although the same data chose them. Run:
python examples/psdme_latency.py"""

from assay import psdme
from assay.datasets import load_llmperf

res = psdme.bands(load_llmperf(), select="top:5", delta=0.1, band="berk-jones", gammas=(0.05, 0.1, 0.2),
                  columns={"kpi": "ttft_s"}, failures="worst", seed=0)

chosen = res.table[res.table["selected"]]
print(chosen[["config", "n", "mean", "kpi_0.95", "kpi_0.9", "kpi_0.8"]].round(4).to_string(index=False))
for b in res.info["best"]:
    where = f"{b['best_kpi']:.3f} s ({b['best_config']})" if b["best_config"] else "none"
    print(f"best guaranteed TTFT at {b['reliability']:.0%} reliability: {where}")
print("guarantee:", res.level["meaning"])

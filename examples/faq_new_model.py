"""FAQ: a new model's accuracy over 1,351 MMLU-Pro math questions from 5% of them, using 300 earlier models'
answers. Answers are simulated from the FAQ paper's fitted factors (shipped), so the truth is known. Run:
python examples/faq_new_model.py"""

import assay.faq as faq
from assay.datasets import simulated_faq

history, new, truth = simulated_faq(0, n_history=300, n_new=3)
res = faq.evaluate(history, new, budget=0.05, seed=0)  # fits (and caches) the factor model on the history

est = res.estimates[["model", "estimate", "ci_low", "ci_high", "n_queries", "gain_vs_uniform"]].copy()
est["truth"] = truth.to_numpy()
print(est.round(4).to_string(index=False))
low, high = res.confidence_interval()
print(f"covered: {int(((low <= est['truth']) & (est['truth'] <= high)).sum())} of {len(est)}; "
      f"{res.n} {res.n_meaning}")

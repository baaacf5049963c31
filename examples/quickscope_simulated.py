"""QuickScope without an LLM: search the 4,440-template DyVal space of a simulated model whose error rate per
template is known, certify the templates it fails at least 90% of the time (all certificates hold together with
probability 99%), and check them against the truth. Run: python examples/quickscope_simulated.py"""

from assay.benchmarks.worlds import get_world
from assay.quickscope.simulate import simulate

res = simulate(get_world("dyval-ceiling"), budget=3000, certify=0.9, seed=0)

top = res.table.drop(columns=["arm", "key", "origin"])
print(top.head(8).round(3).to_string(index=False))
print(f"{res.info['n_certified']} certified after {res.n} tickets; false certificates: "
      f"{res.info['simulated']['false_certifications']}")

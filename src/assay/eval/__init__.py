"""A campaign: one file, one journal, every method's public functions, one report (``assay eval``).

:mod:`.spec` reads and validates the campaign file (TOML) into frozen dataclasses::

    from assay.eval import load_campaign
    campaign = load_campaign("campaign.toml")
    campaign.sections()      # ['faq', 'kpi', ...], in the order they run
    campaign.fingerprint()   # 16 hex characters: the same file gives the same fingerprint
"""

from .spec import (
    GENERATORS,
    KPI_METRICS,
    SECTIONS,
    BankSpec,
    Budget,
    Campaign,
    CompareSpec,
    FaqSpec,
    JudgeSpec,
    KpiSpec,
    ModelSpec,
    ScopeSpec,
    SirenSpec,
    load_campaign,
    parse_campaign,
)

__all__ = ["GENERATORS", "KPI_METRICS", "SECTIONS", "BankSpec", "Budget", "Campaign", "CompareSpec", "FaqSpec",
           "JudgeSpec", "KpiSpec", "ModelSpec", "ScopeSpec", "SirenSpec", "load_campaign", "parse_campaign"]

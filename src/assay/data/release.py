"""The directory layout of the public SIREN release: ``tensor_a_B<budget>.npy`` + ``col_b.npy`` per model."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import AssayInputError

__all__ = ["read_siren_release", "looks_like_siren_release"]

_TENSOR = re.compile(r"tensor_a_B(\d+)\.npy$")


def looks_like_siren_release(path: Path) -> bool:
    """Whether ``path`` holds a SIREN release: ``tensor_a_B*.npy`` files in it or one or two folder levels below.

    Parameters
    ----------
    path : Path
        A folder.

    Returns
    -------
    bool
        True when such a file exists.
    """
    return any(True for _ in path.glob("tensor_a_B*.npy")) or any(
        True for _ in path.glob("*/tensor_a_B*.npy")
    ) or any(True for _ in path.glob("*/*/tensor_a_B*.npy"))


def _model_dirs(path: Path) -> list[Path]:
    return sorted({p.parent for p in path.rglob("tensor_a_B*.npy")})


def _load_npy(f: Path) -> np.ndarray:
    try:
        return np.load(f, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise AssayInputError(f"could not read {f} as a numpy array: {exc}") from exc


def read_siren_release(path: str | Path) -> pd.DataFrame:
    """Read score tensors in the layout of the public SIREN release into a tidy table.

    Each model folder holds ``tensor_a_B<budget>.npy`` (items x shortlist, 0/1) and ``col_b.npy``
    (the untuned default prompt on the same items). ``path`` may be one model folder, a tuner
    folder of model folders, or a folder of tuner folders. Systems are named after the model
    folder (a trailing ``_law`` / ``_math`` is kept), prefixed by the tuner folder when several
    tuners are read (``dspy/Qwen_Qwen3-8B_law``). The default prompt becomes budget 0 with the
    single artifact ``default``. Items are the row positions ``"0" .. "M-1"`` (the release
    ships no item ids; rows are aligned across models and tuners).

    Parameters
    ----------
    path : str or Path
        A model folder, a tuner folder or a folder of tuner folders.

    Returns
    -------
    DataFrame
        Columns ``system``, ``budget``, ``artifact``, ``item`` and ``score``.

    Raises
    ------
    AssayInputError
        If there are no ``tensor_a_B*.npy`` files, a tensor's name carries no integer budget, a tensor is not 2-D,
        or a model's tensors disagree on the number of items.
    """
    root = Path(path)
    dirs = _model_dirs(root)
    if not dirs:
        raise AssayInputError(f"no tensor_a_B*.npy files under {root}")
    tuners = {d.parent for d in dirs}
    frames = []
    for d in dirs:
        name = d.name if len(tuners) == 1 else f"{d.parent.name}/{d.name}"
        files = list(d.glob("tensor_a_B*.npy"))
        odd = [f.name for f in files if not _TENSOR.fullmatch(f.name)]
        if odd:
            raise AssayInputError(
                f"{d}: cannot read the budget from {', '.join(odd)}; tensor files must be named "
                "tensor_a_B<integer budget>.npy (e.g. tensor_a_B1500000.npy)"
            )
        files.sort(key=lambda p: int(_TENSOR.fullmatch(p.name).group(1)))
        blocks: list[tuple[float, np.ndarray, list[str]]] = []
        for f in files:
            arr = _load_npy(f)
            if arr.ndim != 2:
                raise AssayInputError(f"{f} should be a 2-D items x artifacts array, has shape {arr.shape}")
            budget = float(_TENSOR.fullmatch(f.name).group(1))
            blocks.append((budget, arr, [f"a{k}" for k in range(arr.shape[1])]))
        col_b = d / "col_b.npy"
        if col_b.exists():
            b = _load_npy(col_b)
            if b.ndim != 1:
                raise AssayInputError(f"{col_b} should be a 1-D array of item scores, has shape {b.shape}")
            blocks.insert(0, (0.0, b.reshape(-1, 1), ["default"]))
        m = {blk[1].shape[0] for blk in blocks}
        if len(m) != 1:
            raise AssayInputError(f"{d}: tensors disagree on the number of items ({sorted(m)})")
        for budget, arr, names in blocks:
            M, K = arr.shape
            frames.append(
                pd.DataFrame(
                    {
                        "system": name,
                        "budget": budget,
                        "artifact": np.repeat(np.array(names, dtype=object)[None, :], M, axis=0).ravel(),
                        "item": np.repeat(np.arange(M).astype(str), K),
                        "score": arr.astype(float).ravel(),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)

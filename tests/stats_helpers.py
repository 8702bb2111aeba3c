"""Chi-square goodness of fit, with no SciPy: the survival function of chi2(df) at x is the
regularized upper incomplete gamma Q(df/2, x/2) (torch.special.gammaincc)."""
import torch


def chi_square_pvalue(observed: list[int], expected_probs: list[float], min_expected: float = 5.0) -> float:
    """p-value of observed counts against expected probabilities; cells expected < min_expected are pooled."""
    n = sum(observed)
    cells, pooled_obs, pooled_exp = [], 0, 0.0
    for o, p in zip(observed, expected_probs):
        if n * p >= min_expected:
            cells.append((o, n * p))
        else:
            pooled_obs, pooled_exp = pooled_obs + o, pooled_exp + n * p
    if pooled_exp > 0:
        cells.append((pooled_obs, pooled_exp))
    stat = sum((o - e) ** 2 / e for o, e in cells)
    df = len(cells) - 1
    return float(torch.special.gammaincc(torch.tensor(df / 2, dtype=torch.float64),
                                         torch.tensor(stat / 2, dtype=torch.float64)))

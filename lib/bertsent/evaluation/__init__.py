from .sts import (AGGREGATIONS, StsScores, aggregate, cosine_rows, evaluate_sts, spearman_x100)

__all__ = ["AGGREGATIONS", "StsScores", "aggregate", "cosine_rows", "evaluate_sts", "spearman_x100"]

"""Problems: reference PyTorch modules in the KernelBench convention, and their loaders."""

from tritongym.problems.loaders import (
    TableColumns,
    find_problem,
    load_bundled,
    load_directory,
    load_file,
    load_problems,
    load_table,
    match_problem,
)
from tritongym.problems.problem import Problem

__all__ = [
    "Problem",
    "TableColumns",
    "find_problem",
    "load_bundled",
    "load_directory",
    "load_file",
    "load_problems",
    "load_table",
    "match_problem",
]

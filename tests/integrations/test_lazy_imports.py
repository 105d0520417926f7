"""The core, and the adapters themselves, import neither TRL nor verl until they are used."""

import subprocess
import sys


def test_importing_tritongym_and_its_adapters_loads_neither_trl_nor_verl():
    code = (
        "import sys, tritongym.cli, tritongym.integrations.scoring, tritongym.integrations.trl, "
        "tritongym.integrations.verl; print(sorted(m for m in ('trl', 'verl', 'datasets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

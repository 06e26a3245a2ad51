import subprocess
import sys


def test_core_imports_without_trl_or_transformers():
    code = (
        "import sys\n"
        "for name in ('trl', 'transformers', 'datasets', 'vllm'):\n"
        "    sys.modules[name] = None  # any import of these now raises ImportError\n"
        "import gc2po.core as core\n"
        "from gc2po.core import segment, counterfactual, advantages, groups\n"
        "from gc2po.core import losses, perturbations\n"
        "assert callable(core.token_advantages)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"

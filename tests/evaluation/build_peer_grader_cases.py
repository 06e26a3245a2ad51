"""Rebuild ``peer_grader_cases.jsonl``: grader cases and verdicts from other projects' test suites.

Not a test (pytest does not collect it). It reads git checkouts of the peer repositories at the
pinned commits below and writes one JSON line per case:
``{id, completion, gold, peer_verdict, kind, repo, path, commit, test, licence, config}``.

Selection rule (fixed before measuring, no case picked by hand):
- every parametrised case of a test that grades a (gold, prediction) pair with the peer's
  default comparison settings; cases that set a non-default option (math-verify's ``precision``
  other than 6, ``strict=False``, ``allow_set_relation_comp=True``) are left out, since our grader
  uses the defaults; cases built by code (f-strings) are left out as not literal;
- the verdict is the one the peer's test asserts;
- ``completion`` is what the peer's grader reads: the prediction string where the test passes
  text (math-verify), ``\\boxed{answer}`` where the peer grades the content of the last box
  (hendrycks/math ``is_equiv`` after ``last_boxed_only_string``), ``Answer: X`` where the peer
  reads that line (simple-evals' ANSWER_PATTERN); NeMo-Skills' ``math_equal`` pairs, asserted in
  both orders, are two cases each, ``\\boxed{first}`` against the second (its grader compares the
  last box's content); ``kind`` is ``boxed`` when the completion holds a
  ``\\boxed{}`` and ``unboxed`` otherwise.

Usage:

    python3 tests/evaluation/build_peer_grader_cases.py MIRRORS_DIR \\
        > tests/evaluation/peer_grader_cases.jsonl

where MIRRORS_DIR holds ``<owner>+<name>/repo`` bare clones (as the ``fetch`` tool writes them).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

MATH_VERIFY = ("huggingface/Math-Verify", "5d148cfaaf99214c2e4ffb4bc497ab042c592a7a", "Apache-2.0")
HENDRYCKS = ("hendrycks/math", "5f3bf91d13367550bed100240554fd11c25abe48", "MIT")
OPEN_R1 = ("huggingface/open-r1", "1416fa0cf21595d2083b399a2a0bbddd7f6e9563", "Apache-2.0")
SIMPLE_EVALS = ("openai/simple-evals", "ee3b0318d8d1d9d72755a4120879be65f7c07e9e", "MIT")
TRL = ("huggingface/trl", "f2cd57710ae345ea6428ae95363267fcf38a3dc8", "Apache-2.0")
NEMO_SKILLS = ("NVIDIA/NeMo-Skills", "0b012df8a09cd4730d31b16e90a0d8f13d145fb8", "Apache-2.0")
MATH_VERIFY_FILES = [
    "tests/test_all.py",
    "tests/test_boxed.py",
    "tests/test_numina_cases.py",
    "tests/test_open_thoughts.py",
    "tests/test_strict.py",
    "tests/test_yujianll.py",
]
DEFAULT_OPTIONS = {"precision": 6, "strict": True, "allow_set_relation_comp": False}


def git_show(mirrors: Path, repo: str, commit: str, path: str) -> str:
    git_dir = mirrors / repo.replace("/", "+") / "repo"
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def case(repo_info, path, test, completion, gold, verdict, config) -> dict:
    repo, commit, licence = repo_info
    return {
        "completion": completion,
        "gold": gold,
        "peer_verdict": bool(verdict),
        "kind": "boxed" if "\\boxed" in completion else "unboxed",
        "repo": repo,
        "path": path,
        "commit": commit,
        "test": test,
        "licence": licence,
        "config": config,
    }


def _parametrize(func: ast.FunctionDef):
    for deco in func.decorator_list:
        if isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "parametrize":
            names = [n.strip() for n in ast.literal_eval(deco.args[0]).split(",")]
            return names, deco.args[1]
    return None


def _compare_options(func: ast.FunctionDef) -> dict:
    """Keyword arguments of the compare_strings / verify call inside the test
    (names or constants)."""
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") in (
            "compare_strings",
            "verify",
        ):
            return {
                k.arg: (k.value.id if isinstance(k.value, ast.Name) else ast.literal_eval(k.value))
                for k in node.keywords
            }
    return {}


def math_verify_cases(mirrors: Path) -> list[dict]:
    out = []
    for path in MATH_VERIFY_FILES:
        tree = ast.parse(git_show(mirrors, MATH_VERIFY[0], MATH_VERIFY[1], path))
        for func in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
            found = _parametrize(func)
            if found is None:
                continue
            names, rows = found
            options = _compare_options(func)
            for row in rows.elts:
                try:
                    values = dict(zip(names, ast.literal_eval(row)))
                except ValueError:
                    continue  # built by code (f-string): not a literal case
                settings = {
                    k: values.get(v, v) if isinstance(v, str) else v
                    for k, v in options.items()
                    if k in DEFAULT_OPTIONS
                }
                if any(settings.get(k, d) != d for k, d in DEFAULT_OPTIONS.items()):
                    continue  # a non-default option: not what our grader's defaults decide
                verdict = values.get("expected", values.get("result"))
                config = f"match_types={options.get('match_types', ['latex', 'expr'])}"
                out.append(
                    case(
                        MATH_VERIFY,
                        path,
                        func.name,
                        values["pred"],
                        values["gold"],
                        verdict,
                        config,
                    )
                )
    return out


def hendrycks_cases(mirrors: Path) -> list[dict]:
    """unittest methods: test_in (model answer) and test_out (gold),
    then assertTrue/False(is_equiv)."""
    path = "modeling/math_equivalence_test.py"
    tree = ast.parse(git_show(mirrors, HENDRYCKS[0], HENDRYCKS[1], path))
    out = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef):
            continue
        current = {}
        for stmt in func.body:
            if isinstance(stmt, ast.Assign):
                current[stmt.targets[0].id] = ast.literal_eval(stmt.value)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                verdict = stmt.value.func.attr == "assertTrue"
                out.append(
                    case(
                        HENDRYCKS,
                        path,
                        func.name,
                        f"\\boxed{{{current['test_in']}}}",
                        current["test_out"],
                        verdict,
                        "is_equiv(last boxed, answer)",
                    )
                )
    return out


def reward_test_cases(mirrors: Path, repo_info, path: str) -> list[dict]:
    """accuracy-reward unit tests (open-r1, TRL): literal completion and solution lists, then
    ``rewards[i] == value`` assertions; a ``None`` reward (gold unparsable) is no verdict."""
    tree = ast.parse(git_show(mirrors, repo_info[0], repo_info[1], path))
    out, seen = [], set()
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef):
            continue
        called = re.search(r"\b(reasoning_accuracy_reward|accuracy_reward)\(", ast.unparse(func))
        if called is None:
            continue
        values = {
            stmt.targets[0].id: ast.literal_eval(stmt.value)
            for stmt in func.body
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.List)
        }
        completions = values.get("completion") or values.get("completions")
        solutions = values.get("solution") or values.get("solutions")
        for stmt in func.body:
            found = re.fullmatch(
                r"(?:self\.assertEqual\(rewards\[(\d+)\], ([\d.]+)\)|assert rewards\[(\d+)\] == "
                r"([\d.]+))",
                ast.unparse(stmt),
            )
            if found:
                i = int(found.group(1) or found.group(3))
                reward = float(found.group(2) or found.group(4))
                key = (completions[i][0]["content"], solutions[i])
                if key not in seen:
                    seen.add(key)
                    out.append(
                        case(
                            repo_info,
                            path,
                            func.name,
                            key[0],
                            key[1],
                            reward == 1.0,
                            called.group(1),
                        )
                    )
    return out


def simple_evals_cases(mirrors: Path) -> list[dict]:
    """The worked examples of EQUALITY_TEMPLATE
    (expression 1 = target, 2 = the model's 'Answer:' line)."""
    path = "common.py"
    text = git_show(mirrors, SIMPLE_EVALS[0], SIMPLE_EVALS[1], path)
    template = text.split('EQUALITY_TEMPLATE = r"""', 1)[1].split("---", 1)[0]
    pattern = re.compile(r"Expression 1: (.+)\n\s*Expression 2: (.+)\n\n(Yes|No)")
    return [
        case(
            SIMPLE_EVALS,
            path,
            "EQUALITY_TEMPLATE",
            f"Answer: {expr2.strip()}",
            expr1.strip(),
            verdict == "Yes",
            "check_equality examples; ANSWER_PATTERN reads 'Answer: X'",
        )
        for expr1, expr2, verdict in pattern.findall(template)
    ]


def nemo_skills_cases(mirrors: Path) -> list[dict]:
    """``math_equal`` pairs of NeMo-Skills' grader test: each pair is asserted equal (or unequal)
    in both orders, so each order is a case; the first element is graded as the model's boxed
    answer (NeMo-Skills compares the extracted last-box content). A pair holding ``None`` or an
    expression (``5 / 2``) is not a literal answer text and is left out."""
    path = "tests/test_math_equal.py"
    tree = ast.parse(git_show(mirrors, NEMO_SKILLS[0], NEMO_SKILLS[1], path))
    out, seen = [], set()
    for func in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        found = _parametrize(func)
        if found is None:
            continue
        verdict = func.name == "test_correct_examples"
        for row in found[1].elts:
            pair = (
                ast.literal_eval(row)
                if isinstance(row, ast.Tuple) and all(isinstance(e, ast.Constant) for e in row.elts)
                else None
            )
            if pair is None or None in pair:
                continue
            for answer, gold in dict.fromkeys([tuple(map(str, pair)), tuple(map(str, pair[::-1]))]):
                if (answer, gold) in seen:  # (5, 5) in both orders, or a pair the test repeats
                    continue
                seen.add((answer, gold))
                out.append(
                    case(
                        NEMO_SKILLS,
                        path,
                        func.name,
                        f"\\boxed{{{answer}}}",
                        str(gold),
                        verdict,
                        "math_equal(last boxed, answer), both orders",
                    )
                )
    return out


def main(mirrors: Path) -> None:
    cases = (
        math_verify_cases(mirrors)
        + hendrycks_cases(mirrors)
        + reward_test_cases(mirrors, OPEN_R1, "tests/test_rewards.py")
        + simple_evals_cases(mirrors)
        + reward_test_cases(mirrors, TRL, "tests/test_rewards.py")
        + nemo_skills_cases(mirrors)
    )
    for number, item in enumerate(cases, 1):
        print(json.dumps({"id": f"peer-{number:04d}", **item}, ensure_ascii=False))


if __name__ == "__main__":
    main(Path(sys.argv[1]))

"""The training modules import each other without cycles (lazy imports inside functions included), and the
folders only import downwards: data and features import no recipe, validation, export or card code."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # training/
# a folder may import the folders before it in this flow, never one after it
FLOW = ("features", "data", "models", "encoders", "recipes", "validate", "export", "cards")


def modules():
    """'pkg.mod' -> path of every module of the training package (tests aside)."""
    out = {}
    for d, _, files in os.walk(ROOT):
        rel = os.path.relpath(d, ROOT)
        if rel.split(os.sep)[0] in ("tests", "cache", "runs") or "__pycache__" in rel:
            continue
        for f in files:
            if f.endswith(".py"):
                out[".".join(p for p in (rel.replace(os.sep, "."), f[:-3]) if p != ".")] = os.path.join(d, f)
    return out


def training_imports(path, known):
    deps = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("training"):
            base = node.module[len("training."):] if node.module != "training" else ""
            for a in node.names:
                full = f"{base}.{a.name}" if base else a.name
                deps.add(full if full in known else base)
        elif isinstance(node, ast.Import):
            deps.update(a.name[len("training."):] for a in node.names if a.name.startswith("training."))
    return {d for d in deps if d in known}


def find_cycle(graph):
    """One import cycle as a list of module names, or None."""
    state = {}

    def visit(m, path):
        state[m] = "open"
        for d in sorted(graph.get(m, ())):
            if state.get(d) == "open":
                return path[path.index(d):] + [d]
            if d not in state:
                found = visit(d, path + [d])
                if found:
                    return found
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m, [m])
            if found:
                return found
    return None


def graph():
    mods = modules()
    return {m: training_imports(p, mods) - {m} for m, p in mods.items()}


def test_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_between_training_modules():
    g = graph()
    assert {"recipes.longform", "cards.render", "export.ensemble", "validate.evaluation", "data.clips"} <= g.keys()
    assert find_cycle(g) is None, " -> ".join(find_cycle(g))


def test_data_and_features_import_nothing_downstream():
    g = graph()
    for m, deps in g.items():
        if m.split(".")[0] in ("data", "features"):
            bad = {d for d in deps if d.split(".")[0] not in ("data", "features")}
            assert not bad, f"{m} imports {bad}"


def test_every_module_imports():
    """Each module loads on the training requirements alone (the teachers' venv packages are imported lazily)."""
    import importlib
    for m in sorted(modules()):
        if m.rsplit(".", 1)[-1] not in ("__main__", "__init__"):
            importlib.import_module(f"training.{m}")

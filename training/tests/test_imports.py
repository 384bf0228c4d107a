"""The training modules import each other without cycles (lazy imports inside functions included):
shared pieces live in small modules (evaluation.py, speaker_config.py) that import none of their users."""
import ast
import os

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def relative_imports(path):
    deps = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            deps.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
    return deps


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


def test_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_between_training_modules():
    graph = {f[:-3]: relative_imports(os.path.join(HERE, f)) for f in os.listdir(HERE) if f.endswith(".py")}
    assert {"train", "card", "ensemble", "evaluation"} <= graph.keys()
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph))

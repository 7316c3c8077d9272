"""Prints, as JSON, the Params of each public class of a PySpark wrapper module, read with ast (no
pyspark needed): each Param's name, description and type converter, inherited ones included, and
the defaults its __init__ methods set (_setDefault keywords; a keyword given one of __init__'s own
arguments takes what the subclass passes to super().__init__). Usage: python3 python_params.py MODULE.py"""
import ast
import json
import sys

tree = ast.parse(open(sys.argv[1], encoding="utf-8").read())
declared = {}
for node in tree.body:
    if not isinstance(node, ast.ClassDef):
        continue
    info = {"bases": [ast.unparse(b) for b in node.bases], "params": {}, "defaults": {}, "args": [], "superArgs": []}
    for item in node.body:
        if isinstance(item, ast.Assign) and isinstance(item.value, ast.Call) and ast.unparse(item.value.func) == "Param":
            call = item.value
            converter = next(ast.unparse(k.value) for k in call.keywords if k.arg == "typeConverter")
            info["params"][ast.literal_eval(call.args[1])] = {
                "attribute": item.targets[0].id,
                "doc": ast.literal_eval(call.args[2]),
                "converter": converter.split(".")[-1],
            }
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            info["args"] = [a.arg for a in item.args.args[1:]]
            for call in (n for n in ast.walk(item) if isinstance(n, ast.Call)):
                name = ast.unparse(call.func)
                if name == "self._setDefault":
                    for k in call.keywords:
                        if isinstance(k.value, ast.Name):
                            info["defaults"][k.arg] = {"arg": info["args"].index(k.value.id)}
                        else:
                            info["defaults"][k.arg] = ast.literal_eval(k.value)
                elif name == "super().__init__":
                    info["superArgs"] = [ast.literal_eval(a) for a in call.args]
    declared[node.name] = info


def effective(name, super_args):
    info = declared[name]
    params, defaults = {}, {}
    for base in info["bases"]:
        if base in declared:
            p, d = effective(base, info["superArgs"])
            params.update(p)
            defaults.update(d)
    params.update(info["params"])
    for key, value in info["defaults"].items():
        defaults[key] = super_args[value["arg"]] if isinstance(value, dict) else value
    return params, defaults


out = {}
for name in declared:
    if not name.startswith("_"):
        params, defaults = effective(name, [])
        out[name] = {"params": params, "defaults": defaults}
print(json.dumps(out))

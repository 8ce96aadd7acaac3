"""The dependency graph cfn-lint draws of a template (what `cfn-lint --build-graph` writes as DOT), as JSON.

`--build-graph` needs pydot or pygraphviz to write DOT; the graph itself is cfn-lint's own (cfnlint.graph: edges from
Ref, Fn::GetAtt, Fn::Sub and DependsOn, each with the path inside its resource where it was found, Fn::If included),
so this prints that graph's resource edges instead of a DOT file.

    python3 cfn-graph.py template.json  ->  {"edges": [{"from": "A", "to": "B", "label": "Ref", "path": [...]}]}
"""
import json
import sys

from cfnlint.decode import decode
from cfnlint.template import Template

template, matches = decode(sys.argv[1])
if template is None:
    sys.exit(f"cfn-lint could not read {sys.argv[1]}: {matches}")
graph = Template(sys.argv[1], template, ["us-east-1"]).graph.graph
resources = template.get("Resources", {})
edges = [
    {"from": a, "to": b, "label": data.get("label"), "path": data.get("source_paths")}
    for a, b, data in graph.edges(data=True)
    if a in resources and b in resources
]
print(json.dumps({"edges": edges}))

"""RetentionPolicy's retention rules, one module each; `registry` lists them in order.

A rule is one object (`rule.Rule`): its spec field and how it is parsed, the facts and
time lookups it needs, whether it proposes a cut or only lowers one, and how tenancy and
loss attribution name it. Planning, the Spark plan job, tenancy and loss attribution
iterate the registry, so a new rule is its own module, its CRD field and its tests, plus
its line in `registry` (and its value's field in `registry.RetentionRules`).
"""

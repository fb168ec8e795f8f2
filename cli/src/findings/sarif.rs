//! The SARIF 2.1.0 renderer: findings as one run (a rule per code, from the registry; a
//! result per finding, with its physical and logical locations and, for a credit loop, the
//! cycle as a code flow).

use super::{Finding, Level, Object};
use serde_json::{json, Value};

fn physical(f: &Finding) -> Option<Value> {
    match (&f.place, &f.artifact) {
        (Some(p), _) => Some(json!({
            "artifactLocation": {"uri": p.file},
            "region": {
                "startLine": p.line,
                "startColumn": p.column,
                "endLine": p.end_line,
                "endColumn": p.end_column,
            },
        })),
        (None, Some(a)) => Some(json!({"artifactLocation": {"uri": a}})),
        (None, None) => None,
    }
}

fn logical(o: &Object) -> Value {
    json!({"name": o.name, "kind": "resource", "fullyQualifiedName": o.path})
}

/// The findings as one SARIF 2.1.0 run: a rule per code found, a result per finding.
/// `properties` are the run's own (a summary), `Null` for none.
pub fn sarif(findings: &[Finding], properties: Value) -> Value {
    let mut rules: Vec<(&str, &str, Level)> = Vec::new();
    for f in findings {
        if !rules.iter().any(|(c, _, _)| *c == f.code) {
            rules.push((&f.code, crate::codes::summary(&f.code), f.level));
        }
    }
    rules.sort_by(|a, b| a.0.cmp(b.0));
    let mut artifacts: Vec<&str> = findings
        .iter()
        .filter_map(|f| {
            f.place
                .as_ref()
                .map(|p| p.file.as_str())
                .or(f.artifact.as_deref())
        })
        .collect();
    artifacts.sort_unstable();
    artifacts.dedup();
    let results: Vec<Value> = findings
        .iter()
        .map(|f| {
            let mut text = f.message.clone();
            if let Some(h) = &f.help {
                text += &format!(" (help: {h})");
            }
            let mut location = json!({});
            if let Some(p) = physical(f) {
                location["physicalLocation"] = p;
            }
            if !f.objects.is_empty() {
                location["logicalLocations"] = f.objects.iter().map(logical).collect();
            }
            let mut r = json!({
                "ruleId": f.code,
                "level": f.level,
                "message": {"text": text},
                "locations": [location],
            });
            if !f.flow.is_empty() {
                let steps: Vec<Value> = f
                    .flow
                    .iter()
                    .map(|s| {
                        json!({"location": {
                            "message": {"text": s.message},
                            "logicalLocations": [logical(&s.object)],
                        }})
                    })
                    .collect();
                r["codeFlows"] = json!([{"threadFlows": [{"locations": steps}]}]);
            }
            if !f.properties.is_null() {
                r["properties"] = f.properties.clone();
            }
            r
        })
        .collect();
    let mut run = json!({
        "tool": {"driver": {
            "name": "weft",
            "version": env!("CARGO_PKG_VERSION"),
            "rules": rules.iter().map(|(code, meaning, level)| json!({
                "id": code,
                "shortDescription": {"text": meaning},
                "defaultConfiguration": {"level": level},
            })).collect::<Vec<_>>(),
        }},
        "artifacts": artifacts.iter().map(|a| json!({"location": {"uri": a}})).collect::<Vec<_>>(),
        "results": results,
    });
    if !properties.is_null() {
        run["properties"] = properties;
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [run],
    })
}

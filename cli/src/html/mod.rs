//! `--format html` of `weft report`, `weft plan` and `weft diff`: one self-contained page (inline SVG,
//! style and script, no fetch), drawn in Rust so that the same input gives the same bytes.
//!
//! `topo.rs` lays out and draws the fabric (by level for trees, grouped by pod when large;
//! a deterministic force layout otherwise); `report.rs`, `plan.rs` and `cabling.rs` are the
//! three pages.

pub(crate) mod cabling;
pub(crate) mod plan;
pub(crate) mod report;
pub(crate) mod topo;

use std::fmt::Write as _;

/// `s` safe in HTML text and attribute values. Controls the HTML parser would drop, replace or
/// fold (NUL, CR, the other C0 controls but tab and line feed, DEL) are shown as their Control
/// Pictures (`␀`, `␍`, …) and C1 controls as `�`, so the page says what the name holds.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            '\t' | '\n' => o.push(c),
            '\u{0}'..='\u{1f}' => {
                o.push(char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}'));
            }
            '\u{7f}' => o.push('\u{2421}'),
            '\u{80}'..='\u{9f}' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// A coordinate, with one decimal (the same text for the same number on every machine).
pub(crate) fn n(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// The heat scale, coolest first.
const HEAT: [&str; 6] = [
    "#dfe7ef", "#9ecae1", "#fee08b", "#fdae61", "#f46d43", "#b2182b",
];

/// The colour of `load` on a scale up to `max` (an idle link the coolest).
pub(crate) fn heat(load: u64, max: u64) -> &'static str {
    if load == 0 || max == 0 {
        return HEAT[0];
    }
    let steps = (HEAT.len() - 1) as u64;
    let i = 1 + ((load.saturating_sub(1)) * steps / max).min(steps - 1);
    HEAT.get(i as usize).copied().unwrap_or(HEAT[0])
}

/// The legend of the heat scale up to `max` (`what` per link).
pub(crate) fn heat_legend(max: u64, what: &str) -> String {
    let mut t = String::from("<div class=\"legend\">");
    let _ = write!(t, "<span>{}:</span>", esc(what));
    let steps = (HEAT.len() - 1) as u64;
    let _ = write!(
        t,
        "<span class=\"sw-c\" style=\"background:{}\"></span>0",
        HEAT[0]
    );
    for i in 1..=steps {
        let lo = (i - 1) * max / steps + 1;
        let hi = i * max / steps;
        if max == 0 || lo > hi {
            continue;
        }
        let c = heat(hi, max);
        let range = if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}–{hi}")
        };
        let _ = write!(
            t,
            " <span class=\"sw-c\" style=\"background:{c}\"></span>{range}"
        );
    }
    t.push_str("</div>");
    t
}

/// Colours of rails 0, 1, … (cycled).
const RAILS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
];

/// The colour of rail `r`.
pub(crate) fn rail_colour(r: u8) -> &'static str {
    RAILS
        .get(usize::from(r) % RAILS.len())
        .copied()
        .unwrap_or(RAILS[0])
}

/// A bar chart: one bar per `(label, value)`, labelled with its value.
pub(crate) fn bar_chart(id: &str, title: &str, x_label: &str, bars: &[(String, u64)]) -> String {
    let max = bars.iter().map(|b| b.1).max().unwrap_or(0).max(1);
    let bw = 46.0;
    let h = 160.0;
    let left = 10.0;
    let w = left * 2.0 + bw * bars.len().max(1) as f64;
    let mut t = String::new();
    let _ = write!(
        t,
        "<figure class=\"chart\"><figcaption>{}</figcaption><svg id=\"{}\" class=\"bars\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" role=\"img\">",
        esc(title),
        esc(id),
        n(w),
        n(h + 40.0),
        n(w),
        n(h + 40.0)
    );
    for (i, (label, v)) in bars.iter().enumerate() {
        let x = left + bw * i as f64;
        let bh = (h - 20.0) * (*v as f64) / max as f64;
        let _ = write!(
            t,
            "<g class=\"bar\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}: {}</title></rect><text x=\"{}\" y=\"{}\" class=\"v\">{}</text><text x=\"{}\" y=\"{}\">{}</text></g>",
            n(x + 3.0),
            n(h - bh),
            n(bw - 6.0),
            n(bh),
            esc(label),
            v,
            n(x + bw / 2.0),
            n(h - bh - 4.0),
            short(*v),
            n(x + bw / 2.0),
            n(h + 14.0),
            esc(label)
        );
    }
    let _ = write!(
        t,
        "<text x=\"{}\" y=\"{}\" class=\"axis\">{}</text></svg></figure>",
        n(w / 2.0),
        n(h + 34.0),
        esc(x_label)
    );
    t
}

/// `v` in at most five characters (12k, 3.4M).
fn short(v: u64) -> String {
    match v {
        0..=9_999 => v.to_string(),
        10_000..=999_999 => format!("{}k", v / 1000),
        _ => format!("{:.1}M", v as f64 / 1e6),
    }
}

/// The page's style: screen and print.
const STYLE: &str = r#"
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em;color:#1b1f24;background:#fff}
h1{font-size:1.5em;margin:0 0 .3em}h2{font-size:1.2em;margin:1.4em 0 .4em;border-bottom:1px solid #d0d7de}
table{border-collapse:collapse;margin:.4em 0}td,th{border:1px solid #d0d7de;padding:2px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
.topo{border:1px solid #d0d7de;max-width:100%;height:auto;background:#fcfdfe}
.sw{fill:#fff;stroke:#57606a;stroke-width:1.2}.sw.leaf{fill:#f6f8fa}.sw.down{stroke-dasharray:3 2;fill:#eee}
.svc{fill:#8250df;stroke:#4c2889}.hosts{font-size:9px;fill:#57606a;text-anchor:middle}
.lbl{font-size:9px;text-anchor:middle;fill:#24292f}.lbl.slant{text-anchor:start}.lvl{font-size:11px;fill:#57606a}
.cable{stroke:#c4ccd4;stroke-width:1}.cable.down{stroke:#cf222e;stroke-dasharray:4 3}
.agg{fill:#f6f8fa;stroke:#57606a;stroke-width:1.2}.agg-t{font-size:10px;text-anchor:middle}
.heat line{stroke-width:2.2}.bundle{stroke-linecap:round;opacity:.85}
.ov .loop{fill:none;stroke:#cf222e;stroke-width:4;opacity:.8}.ov .arrow{fill:#cf222e}.ov .mark{fill:none;stroke:#cf222e;stroke-width:3}
.ov .route{fill:none;stroke:#bf8700;stroke-width:3;stroke-dasharray:6 3}.ov .x{stroke:#cf222e;stroke-width:3}
svg.focus .ov{display:none}svg.focus .ov.on{display:inline}
.touched{stroke:#cf222e!important;stroke-width:3!important;fill:#ffebe9!important}
.legend{font-size:12px;margin:.3em 0}.sw-c{display:inline-block;width:14px;height:10px;margin:0 3px 0 8px;border:1px solid #999}
.bars rect{fill:#0969da}.bars text{font-size:9px;text-anchor:middle}.bars .axis{font-size:11px}
figure.chart{display:inline-block;margin:.3em 1em .3em 0}figcaption{font-weight:600;font-size:12px}
.findings li{margin:.2em 0}.findings a{cursor:pointer}.ok{color:#1a7f37}.bad{color:#cf222e}
details.group{margin:.2em 0}details.group summary{cursor:pointer}
.timeline{display:flex;flex-wrap:wrap;gap:4px;align-items:stretch;margin:.5em 0}
.step{border:1px solid #57606a;border-radius:4px;padding:4px 8px;min-width:5em;cursor:pointer;background:#f6f8fa}
.step.outage{background:#ffebe9;border-color:#cf222e}.step.sel{outline:3px solid #0969da}
.controls label{margin-right:1em}pre{white-space:pre-wrap;font-size:12px;background:#f6f8fa;padding:.5em}
#weft-errors:empty{display:none}#weft-errors{color:#cf222e;white-space:pre-wrap}
@media print{.controls,.noprint{display:none}body{margin:0;font-size:11px}.topo{border:none}
h2{break-after:avoid}figure,table,svg{break-inside:avoid}.heat,.heat-legend{display:none!important}.heat.first{display:inline!important}.heat-legend.first{display:block!important}}
"#;

/// Errors caught before anything else runs: written into the page, so a browser test
/// reads them from the DOM.
const CATCH: &str = r#"
window.weftErrors=[];window.onerror=function(m,s,l){window.weftErrors.push(String(m)+' (line '+l+')');var e=document.getElementById('weft-errors');if(e){e.textContent=window.weftErrors.join('\n');}document.documentElement.setAttribute('data-weft-error',String(m));};
"#;

/// The page's behaviour: choosing a heat map, focusing a finding, opening a group, choosing
/// a plan step (also from the address: `#finding-N`, `#g-N`, `#step-N`); then the ready
/// mark.
const SCRIPT: &str = r#"
(function(){
function all(s,r){return Array.prototype.slice.call((r||document).querySelectorAll(s));}
all('input[name=heat]').forEach(function(i){i.addEventListener('change',function(){
 all('.heat').forEach(function(g){g.style.display=(g.getAttribute('data-heat')===i.value)?'inline':'none';});
 all('.heat-legend').forEach(function(g){g.style.display=(g.getAttribute('data-legend')===i.value)?'block':'none';});});});
all('[data-finding]').forEach(function(a){a.addEventListener('click',function(ev){ev.preventDefault();
 var f=a.getAttribute('data-finding');var on=!a.classList.contains('sel');
 all('[data-finding]').forEach(function(b){b.classList.remove('sel');});
 all('svg.topo').forEach(function(s){s.classList.toggle('focus',on);});
 all('.ov').forEach(function(g){g.classList.toggle('on',on&&g.getAttribute('data-f')===f);});
 if(on){a.classList.add('sel');var t=document.getElementById('topology');if(t){t.scrollIntoView();}}});});
function openHash(){var h=location.hash.slice(1);if(!h){return;}
 var m=/^step-(\d+)$/.exec(h);var s=m&&document.querySelector('.step[data-step='+JSON.stringify(m[1])+']');if(s&&!s.classList.contains('sel')){s.click();}
 m=/^finding-(\d+)$/.exec(h);var a=m&&document.querySelector('[data-finding='+JSON.stringify(m[1])+']');if(a&&!a.classList.contains('sel')){a.click();}
 var d=document.getElementById(h);if(d&&d.tagName==='DETAILS'){d.open=true;}}
all('.step').forEach(function(s){s.addEventListener('click',function(){
 var on=!s.classList.contains('sel');all('.step').forEach(function(b){b.classList.remove('sel');});
 all('.touched').forEach(function(e){e.classList.remove('touched');});
 if(!on){return;}s.classList.add('sel');
 (s.getAttribute('data-sw')||'').split(' ').forEach(function(id){if(id){all('[data-id="'+id+'"]').forEach(function(e){e.classList.add('touched');});}});
 (s.getAttribute('data-g')||'').split(' ').forEach(function(id){if(id){all('[data-gid="'+id+'"]').forEach(function(e){e.classList.add('touched');});}});
 var d=document.getElementById('step-'+s.getAttribute('data-step'));if(d){d.open=true;}});});
window.addEventListener('hashchange',openHash);openHash();
window.addEventListener('beforeprint',function(){all('details').forEach(function(d){d.open=true;});});
document.documentElement.setAttribute('data-weft-ready',String(all('.sw').length));
})();
"#;

/// The whole page: `title`, then `body`.
pub(crate) fn page(title: &str, body: &str) -> String {
    page_styled(title, "", body)
}

/// The whole page, with `style` after the common style.
pub(crate) fn page_styled(title: &str, style: &str, body: &str) -> String {
    let mut t = String::with_capacity(body.len() + 8192);
    t.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    t.push_str("<meta name=\"generator\" content=\"weft\">");
    t.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">");
    let _ = write!(
        t,
        "<title>{}</title><style>{STYLE}{style}</style>",
        esc(title)
    );
    let _ = write!(t, "<script>{CATCH}</script></head><body>");
    t.push_str("<div id=\"weft-errors\"></div>");
    t.push_str(body);
    let _ = writeln!(t, "<script>{SCRIPT}</script></body></html>");
    t
}

#[cfg(test)]
mod esc_tests {
    use super::esc;

    #[test]
    fn markup_and_controls_cannot_reach_the_page_raw() {
        assert_eq!(
            esc("<b a='1'>&\"x\"</b>"),
            "&lt;b a=&#39;1&#39;&gt;&amp;&quot;x&quot;&lt;/b&gt;"
        );
        assert_eq!(
            esc("a\0b\rc\td\ne\u{1b}\u{7f}\u{85}"),
            "a\u{2400}b\u{240d}c\td\ne\u{241b}\u{2421}\u{fffd}"
        );
        assert_eq!(esc("ib7:SX6036/U1 é"), "ib7:SX6036/U1 é");
    }
}

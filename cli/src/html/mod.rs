//! `--format html` of `weft report`, `weft plan` and `weft diff`: one self-contained page (inline SVG,
//! style and script, no fetch), drawn in Rust so that the same input gives the same bytes.
//!
//! Markup is written with `maud` (checked at compile time, every value escaped unless wrapped
//! in `PreEscaped`, which only the page's own constant style and scripts are: a tidy test
//! holds that). Text from the input goes through [`Shown`], which also
//! shows its control characters. The style (`style.css`, `cabling.css`) and the scripts
//! (`catch.js`, `page.js`) are files here, pulled in with `include_str!`, and the page's
//! Content-Security-Policy admits exactly them by their SHA-256 hashes: no unsafe-inline, no
//! style attributes, no inline event handlers, so markup that slipped into a name could not run. The
//! script reads what it acts on from `data-*` attributes (escaped as any attribute).
//!
//! `topo.rs` lays out and draws the fabric (by level for trees, grouped by pod when large;
//! a deterministic force layout otherwise); `report.rs`, `plan.rs` and `cabling.rs` are the
//! three pages.

pub(crate) mod cabling;
pub(crate) mod plan;
pub(crate) mod report;
pub(crate) mod topo;

use maud::{html, Markup, PreEscaped, Render, DOCTYPE};

/// `s` safe in HTML text and attribute values. Controls the HTML parser would drop, replace or
/// fold (NUL, CR, the other C0 controls but tab and line feed, DEL) are shown as their Control
/// Pictures (`␀`, `␍`, …) and C1 controls as `�`, so the page says what the name holds.
fn esc(s: &str) -> String {
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

/// Text from the input (names, messages, reports) in a page: escaped as [`esc`] does, its
/// controls shown. (Any other string maud escapes by itself; this one also shows controls.)
pub(crate) struct Shown<'a>(pub(crate) &'a str);

impl Render for Shown<'_> {
    fn render_to(&self, buffer: &mut String) {
        buffer.push_str(&esc(self.0));
    }
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

/// The heat scale, coolest first (`style.css` names each as `.sw-c.hI`).
const HEAT: [&str; 6] = [
    "#dfe7ef", "#9ecae1", "#fee08b", "#fdae61", "#f46d43", "#b2182b",
];

/// The step of the heat scale of `load` on a scale up to `max` (an idle link the coolest).
pub(crate) fn heat_index(load: u64, max: u64) -> usize {
    if load == 0 || max == 0 {
        return 0;
    }
    let steps = (HEAT.len() - 1) as u64;
    (1 + ((load.saturating_sub(1)) * steps / max).min(steps - 1)) as usize
}

/// The colour of `load` on a scale up to `max` (an idle link the coolest).
pub(crate) fn heat(load: u64, max: u64) -> &'static str {
    HEAT.get(heat_index(load, max)).copied().unwrap_or(HEAT[0])
}

/// A swatch of the heat scale's step `i`.
pub(crate) fn heat_swatch(i: usize, title: Option<&str>) -> Markup {
    html! { span class={ "sw-c h" (i) } title=[title] {} }
}

/// The legend of the heat scale up to `max` (`what` per link).
pub(crate) fn heat_legend(max: u64, what: &str) -> Markup {
    let steps = (HEAT.len() - 1) as u64;
    html! {
        div class="legend" {
            span { (Shown(what)) ":" }
            (heat_swatch(0, None)) "0"
            @for i in 1..=steps {
                @let lo = (i - 1) * max / steps + 1;
                @let hi = i * max / steps;
                @if max != 0 && lo <= hi {
                    " " (heat_swatch(heat_index(hi, max), None))
                    @if lo == hi { (lo) } @else { (lo) "–" (hi) }
                }
            }
        }
    }
}

/// Colours of rails 0, 1, … (cycled; `style.css` names each as `.rI`).
const RAILS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
];

/// The class of rail `r`'s colour (`r0` …).
pub(crate) fn rail_class(r: u8) -> String {
    format!("r{}", usize::from(r) % RAILS.len())
}

/// A bar chart: one bar per `(label, value)`, labelled with its value.
pub(crate) fn bar_chart(id: &str, title: &str, x_label: &str, bars: &[(String, u64)]) -> Markup {
    let max = bars.iter().map(|b| b.1).max().unwrap_or(0).max(1);
    let bw = 46.0;
    let h = 160.0;
    let left = 10.0;
    let w = left * 2.0 + bw * bars.len().max(1) as f64;
    html! {
        figure class="chart" {
            figcaption { (Shown(title)) }
            svg id=(id) class="bars" viewBox={ "0 0 " (n(w)) " " (n(h + 40.0)) }
                width=(n(w)) height=(n(h + 40.0)) role="img" {
                @for (i, (label, v)) in bars.iter().enumerate() {
                    @let x = left + bw * i as f64;
                    @let bh = (h - 20.0) * (*v as f64) / max as f64;
                    g class="bar" {
                        rect x=(n(x + 3.0)) y=(n(h - bh)) width=(n(bw - 6.0)) height=(n(bh)) {
                            title { (Shown(label)) ": " (v) }
                        }
                        text x=(n(x + bw / 2.0)) y=(n(h - bh - 4.0)) class="v" { (short(*v)) }
                        text x=(n(x + bw / 2.0)) y=(n(h + 14.0)) { (Shown(label)) }
                    }
                }
                text x=(n(w / 2.0)) y=(n(h + 34.0)) class="axis" { (Shown(x_label)) }
            }
        }
    }
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
const STYLE: &str = include_str!("style.css");

/// The cabling page's own style, after [`STYLE`].
const CABLING_STYLE: &str = include_str!("cabling.css");

/// Errors caught before anything else runs (and style or script the Content-Security-Policy
/// refused): written into the page, so a browser test reads them from the DOM.
const CATCH: &str = include_str!("catch.js");

/// The page's behaviour: choosing a heat map, focusing a finding, opening a group, choosing
/// a plan step (also from the address: `#finding-N`, `#g-N`, `#step-N`); then the ready
/// mark. It reads what it acts on from the page's `data-*` attributes.
const SCRIPT: &str = include_str!("page.js");

/// Which style a page carries.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// [`STYLE`] alone.
    Common,
    /// [`STYLE`], then [`CABLING_STYLE`].
    Cabling,
}

/// `'sha256-…'`: a CSP hash source for an inline element whose text is `text`.
fn hash_source(text: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("'sha256-{}'", base64(&Sha256::digest(text.as_bytes())))
}

/// `bytes` in standard Base64, padded.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut o = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let v = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                let i = (v >> (18 - 6 * k)) & 63;
                o.push(char::from(ABC.get(i as usize).copied().unwrap_or(b'=')));
            } else {
                o.push('=');
            }
        }
    }
    o
}

/// The page's Content-Security-Policy: nothing fetched, and only the page's own style and
/// scripts, named by their hashes (no unsafe-inline: a `<script>`, a style attribute or a handler
/// that reached the page from data would not run; the page works from disk as served).
fn csp(style: Style) -> String {
    let css = match style {
        Style::Common => STYLE.to_owned(),
        Style::Cabling => [STYLE, CABLING_STYLE].concat(),
    };
    format!(
        "default-src 'none'; style-src {}; script-src {} {}; img-src data:",
        hash_source(&css),
        hash_source(CATCH),
        hash_source(SCRIPT)
    )
}

/// The whole page: `title`, then `body`.
pub(crate) fn page(title: &str, body: Markup) -> String {
    page_styled(title, Style::Common, body)
}

/// The whole page, with `style`.
pub(crate) fn page_styled(title: &str, style: Style, body: Markup) -> String {
    let page = html! {
        (DOCTYPE) "\n"
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="generator" content="weft";
                meta http-equiv="Content-Security-Policy" content=(csp(style));
                title { (Shown(title)) }
                style {
                    (PreEscaped(STYLE))
                    @if style == Style::Cabling { (PreEscaped(CABLING_STYLE)) }
                }
                script { (PreEscaped(CATCH)) }
            }
            body {
                div id="weft-errors" {}
                (body)
                script { (PreEscaped(SCRIPT)) }
            }
        }
    };
    let mut t = page.into_string();
    t.push('\n');
    t
}

#[cfg(test)]
mod esc_tests {
    use super::{base64, csp, esc, hash_source, Shown, Style, HEAT, RAILS, SCRIPT, STYLE};
    use maud::html;

    #[test]
    fn input_text_in_markup_is_escaped_and_its_controls_shown() {
        let name = "<script>alert(1)</script>\0\"'&";
        let page = html! { p title=(Shown(name)) { (Shown(name)) } (name) }.into_string();
        assert_eq!(
            page,
            "<p title=\"&lt;script&gt;alert(1)&lt;/script&gt;\u{2400}&quot;&#39;&amp;\">&lt;script&gt;alert(1)&lt;/script&gt;\u{2400}&quot;&#39;&amp;</p>&lt;script&gt;alert(1)&lt;/script&gt;\0&quot;'&amp;"
        );
    }

    #[test]
    fn base64_and_hash_sources_are_the_standard_ones() {
        // RFC 4648's test vectors.
        for (bytes, b64) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(bytes.as_bytes()), b64);
        }
        // SHA-256 of "abc" (FIPS 180-2), as a CSP hash source.
        assert_eq!(
            hash_source("abc"),
            "'sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0='"
        );
        let policy = csp(Style::Common);
        assert!(policy.contains(&hash_source(STYLE)), "{policy}");
        assert!(policy.contains(&hash_source(SCRIPT)), "{policy}");
        assert!(!policy.contains("unsafe"), "{policy}");
        assert_ne!(policy, csp(Style::Cabling));
    }

    #[test]
    fn the_style_colours_every_heat_step_and_rail() {
        for (i, c) in HEAT.iter().enumerate() {
            assert!(
                STYLE.contains(&format!(".sw-c.h{i}{{background:{c}}}")),
                "heat {i}"
            );
        }
        for (i, c) in RAILS.iter().enumerate() {
            assert!(
                STYLE.contains(&format!(".sw-c.r{i}{{background:{c}}}")),
                "rail {i}"
            );
            assert!(
                STYLE.contains(&format!(".sw.r{i}{{stroke:{c};")),
                "rail {i}"
            );
        }
    }

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

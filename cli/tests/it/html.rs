//! `weft report`, `weft plan` and `weft diff` `--format html` in a real browser: Debian's
//! headless Chromium loads each page from disk (no network), and the test reads what it did —
//! the console (`--enable-logging=stderr`: every console message and uncaught error is an
//! `INFO:CONSOLE` line), the DOM after the page's script ran (`--dump-dom`: the script marks
//! the root `data-weft-ready` with the number of switches drawn, and `window.onerror` marks it
//! `data-weft-error` and writes the error into the page), and a screenshot (decoded here: it
//! must not be blank). A page with an error injected shows the check catches it.
//!
//! The pages: the 648-node example, a real NDR/DGX dump with SHARP aggregation nodes
//! imported, a ring under min-hop with its two credit loops, lab-16 with a cable gone down
//! under its tables (failed routes), a plan with an outage, a cabling diff (two cables
//! swapped, one removed, one narrowed) and a diff of a fabric with itself; the
//! 11 664-node example in release mode with `WEFT_BIG_EXAMPLES=1` (its size and load time
//! printed). lab-16's page and a diff page are snapshots, each byte-identical when made
//! twice.
//!
//! Screenshots are written under `target/html-screenshots/` and their paths printed.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "test helpers fail by panicking and say on the terminal what they skipped or measured"
)]

use crate::support::{root, weft};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn temp_dir(name: &str) -> crate::support::Scratch {
    crate::support::scratch(&format!("html-{name}"))
}

/// `weft ARGS --format html -o OUT`, which must succeed; the page.
fn page(args: &[&str], out: &Path) -> String {
    let o = weft(
        &[
            args,
            &["--format", "html", "-o", out.to_str().unwrap(), "-q"],
        ]
        .concat(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    std::fs::read_to_string(out).unwrap()
}

/// Chromium, or `None` (loudly) when it is missing outside CI.
fn chromium(test: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: chromium is missing; CI must run the browser tests (.ci/run installs it)"
        );
        eprintln!("\n==================================================================");
        eprintln!("SKIP {test}: chromium is missing (apt-get install chromium)");
        eprintln!("==================================================================\n");
    }
    found
}

/// What Chromium made of a page.
struct Loaded {
    /// The DOM after the scripts ran.
    dom: String,
    /// Console messages and uncaught errors.
    console: Vec<String>,
    /// Seconds the load (and DOM dump) took.
    secs: f64,
    /// The screenshot.
    png: PathBuf,
}

/// Runs Chromium headless with its own profile directory, killed (by its PID) after
/// `limit`; its stdout and stderr.
fn run_chromium(bin: &Path, args: &[String], profile: &Path, limit: Duration) -> (String, String) {
    let dir = profile.with_extension("out");
    std::fs::create_dir_all(&dir).unwrap();
    let (out, err) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run chromium: {e}"));
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "chromium: {status}: {}",
                std::fs::read_to_string(&err).unwrap_or_default()
            );
            break;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (
        std::fs::read_to_string(&out).unwrap_or_default(),
        std::fs::read_to_string(&err).unwrap_or_default(),
    )
}

/// Loads `file` in Chromium: the DOM and console, then a screenshot named `name`.
fn load(bin: &Path, file: &Path, name: &str) -> Loaded {
    load_at(bin, file, "", name)
}

/// [`load`] at `fragment` (`#step-1`: the page's script acts on it as on a click).
fn load_at(bin: &Path, file: &Path, fragment: &str, name: &str) -> Loaded {
    let work = temp_dir(&format!("chromium-{name}"));
    let url = format!(
        "file://{}{fragment}",
        file.canonicalize().unwrap().display()
    );
    let start = Instant::now();
    let (dom, err) = run_chromium(
        bin,
        &[
            "--enable-logging=stderr".to_owned(),
            "--v=0".to_owned(),
            "--virtual-time-budget=5000".to_owned(),
            "--dump-dom".to_owned(),
            url.clone(),
        ],
        &work.join("profile-dom"),
        Duration::from_secs(180),
    );
    let secs = start.elapsed().as_secs_f64();
    let console = err
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_owned)
        .collect();
    let shots = root().join("target/html-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let png = shots.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&png);
    run_chromium(
        bin,
        &[
            "--window-size=1400,1600".to_owned(),
            format!("--screenshot={}", png.display()),
            url,
        ],
        &work.join("profile-shot"),
        Duration::from_secs(180),
    );
    println!("screenshot: {}", png.display());
    Loaded {
        dom,
        console,
        secs,
        png,
    }
}

/// The page loaded with no console message and no error, its script ran to the end
/// (marking `switches` switches drawn), and its screenshot is not blank.
fn assert_clean(l: &Loaded, switches: usize) {
    assert!(l.console.is_empty(), "console: {:?}", l.console);
    assert!(
        !l.dom.contains("data-weft-error=\""),
        "an error in the page"
    );
    assert!(
        l.dom.contains("<div id=\"weft-errors\"></div>"),
        "errors written into the page"
    );
    let ready = format!("data-weft-ready=\"{switches}\"");
    assert!(
        l.dom.contains(&ready),
        "{ready} missing: the script did not finish, or drew another number of switches"
    );
    let (w, h, inked, colours) = ink(&l.png);
    assert!(w >= 800 && h >= 800, "{w}×{h}");
    assert!(
        inked * 100 > w * h,
        "blank screenshot: {inked} of {} pixels not background",
        w * h
    );
    assert!(colours >= 6, "{colours} colours: the drawing is missing");
}

/// How many times `needle` occurs in `hay`.
fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// A PNG's width, height, pixels that are not the background (white), and distinct
/// colours (up to 64): the PNG decoded here (8-bit RGB or RGBA, not interlaced, as Chromium
/// writes them).
fn ink(png: &Path) -> (usize, usize, usize, usize) {
    let data = std::fs::read(png).unwrap();
    assert_eq!(&data[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let (mut at, mut idat) = (8usize, Vec::new());
    let (mut w, mut h, mut channels) = (0usize, 0usize, 0usize);
    while at + 8 <= data.len() {
        let len = u32::from_be_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        let kind = &data[at + 4..at + 8];
        let body = &data[at + 8..at + 8 + len];
        match kind {
            b"IHDR" => {
                w = u32::from_be_bytes(body[0..4].try_into().unwrap()) as usize;
                h = u32::from_be_bytes(body[4..8].try_into().unwrap()) as usize;
                assert_eq!(body[8], 8, "bit depth");
                channels = match body[9] {
                    2 => 3,
                    6 => 4,
                    c => panic!("colour type {c}"),
                };
                assert_eq!(body[12], 0, "interlaced");
            }
            b"IDAT" => idat.extend_from_slice(body),
            _ => {}
        }
        at += 12 + len;
    }
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&idat).unwrap();
    let stride = w * channels;
    let mut prev = vec![0u8; stride];
    let mut cur = vec![0u8; stride];
    let (mut inked, mut colours) = (0usize, std::collections::BTreeSet::new());
    for y in 0..h {
        let line = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
        let filter = line[0];
        for x in 0..stride {
            let a = if x >= channels { cur[x - channels] } else { 0 };
            let b = prev[x];
            let c = if x >= channels { prev[x - channels] } else { 0 };
            let v = line[x + 1];
            cur[x] = match filter {
                0 => v,
                1 => v.wrapping_add(a),
                2 => v.wrapping_add(b),
                3 => v.wrapping_add(((u16::from(a) + u16::from(b)) / 2) as u8),
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    let pred = if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    };
                    v.wrapping_add(pred)
                }
                f => panic!("filter {f}"),
            };
        }
        for px in cur.chunks(channels) {
            if px[..3] != [255, 255, 255] {
                inked += 1;
            }
            if colours.len() < 64 {
                colours.insert([px[0], px[1], px[2]]);
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    (w, h, inked, colours.len())
}

#[test]
fn an_error_in_a_page_is_caught() {
    let Some(bin) = chromium("an_error_in_a_page_is_caught") else {
        return;
    };
    let dir = temp_dir("injected");
    let good = page(
        &[
            "report",
            root().join("examples/lab-16.weft").to_str().unwrap(),
        ],
        &dir.join("good.html"),
    );
    // A console message, and an error thrown after the page's own script (the page's
    // Content-Security-Policy, which would refuse that script, taken out).
    let bad = without_csp(&good).replace(
        "</body>",
        "<script>console.log('injected message');throw new Error('injected error')</script></body>",
    );
    assert_ne!(bad, good);
    let file = dir.join("bad.html");
    std::fs::write(&file, bad).unwrap();
    let l = load(&bin, &file, "injected-error");
    assert!(
        l.console.iter().any(|c| c.contains("injected message")),
        "{:?}",
        l.console
    );
    assert!(
        l.console.iter().any(|c| c.contains("injected error")),
        "{:?}",
        l.console
    );
    assert!(
        l.dom
            .contains("data-weft-error=\"Uncaught Error: injected error\""),
        "the page marks the error"
    );
    assert!(
        l.dom
            .contains("<div id=\"weft-errors\">Uncaught Error: injected error"),
        "and shows it"
    );
    // The good page passes the same checks.
    let file = dir.join("good.html");
    assert_clean(&load(&bin, &file, "lab-16"), 6);
}

/// `page` without its Content-Security-Policy.
fn without_csp(page: &str) -> String {
    let at = page
        .find("<meta http-equiv=\"Content-Security-Policy\"")
        .expect("a Content-Security-Policy");
    let end = at + page[at..].find('>').unwrap() + 1;
    format!("{}{}", &page[..at], &page[end..])
}

/// The page's CSP admits its own style and scripts (no refusal: [`assert_clean`] sees no
/// console message), and refuses a script and a style attribute injected into it, as a
/// name that escaped the page's escaping would be: neither takes effect, and the page says
/// so.
#[test]
fn the_content_security_policy_refuses_injected_script_and_style() {
    let Some(bin) = chromium("the_content_security_policy_refuses_injected_script_and_style")
    else {
        return;
    };
    let dir = temp_dir("csp");
    let good = page(
        &[
            "report",
            root().join("examples/lab-16.weft").to_str().unwrap(),
        ],
        &dir.join("good.html"),
    );
    let csp = good
        .split("<meta http-equiv=\"Content-Security-Policy\" content=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(count(csp, "'sha256-"), 3, "{csp}");
    assert_eq!(count(&good, "<script>"), 2);
    assert_eq!(count(&good, "<style>"), 1);
    assert!(!good.contains(" style=\""), "no style attribute");
    assert_clean(&load(&bin, &dir.join("good.html"), "csp-good"), 6);
    let injected = good.replace(
        "<h2>Summary</h2>",
        "<h2 id=\"injected\" style=\"color:rgb(1, 2, 3)\">Summary</h2><script>document.documentElement.setAttribute('data-injected','ran')</script>",
    );
    assert_ne!(injected, good);
    let file = dir.join("injected.html");
    std::fs::write(&file, injected).unwrap();
    let l = load(&bin, &file, "csp-injected");
    assert!(
        !l.dom.contains("data-injected=\"ran\""),
        "the injected script ran"
    );
    assert!(
        l.dom
            .contains("data-weft-error=\"refused by the page's Content-Security-Policy"),
        "the refusal is marked on the page"
    );
    let refusals = l
        .console
        .iter()
        .filter(|c| c.contains("Content Security Policy"))
        .count();
    assert!(refusals >= 2, "script and style refused: {:?}", l.console);
    // Without the policy, the same injection runs: the check above is the policy's doing.
    let open = dir.join("open.html");
    std::fs::write(&open, without_csp(&std::fs::read_to_string(&file).unwrap())).unwrap();
    let l = load(&bin, &open, "csp-absent");
    assert!(
        l.dom.contains("data-injected=\"ran\""),
        "without the CSP the script runs"
    );
}

#[test]
fn lab16_page_is_a_snapshot_and_the_same_each_time() {
    let dir = temp_dir("lab16");
    let file = root().join("examples/lab-16.weft");
    let a = page(&["report", file.to_str().unwrap()], &dir.join("a.html"));
    let b = page(&["report", file.to_str().unwrap()], &dir.join("b.html"));
    assert!(a == b, "two runs, two pages");
    // Self-contained: nothing fetched.
    for fetch in [
        "src=\"http",
        "href=\"http",
        "url(",
        "@import",
        "fetch(",
        "XMLHttpRequest",
    ] {
        assert!(!a.contains(fetch), "{fetch}");
    }
    // One element per line, for a readable review.
    let lines = a
        .replace("><", ">\n<")
        .replace(&root().display().to_string(), "[root]");
    insta::assert_snapshot!("lab16_report_html", lines);
}

#[test]
fn the_648_node_example_is_drawn_by_level_with_its_loads() {
    let Some(bin) = chromium("the_648_node_example_is_drawn_by_level_with_its_loads") else {
        return;
    };
    let dir = temp_dir("648");
    let html = page(
        &[
            "report",
            root().join("examples/cluster-648.weft").to_str().unwrap(),
        ],
        &dir.join("648.html"),
    );
    // 36 leaves and 18 spines drawn one by one, each cable's two directions in each of the
    // three heat maps, no group boxes.
    assert_eq!(count(&html, "class=\"sw leaf\""), 36);
    assert_eq!(count(&html, "class=\"sw\""), 18);
    assert_eq!(count(&html, "class=\"agg\""), 0);
    assert_eq!(count(&html, "data-heat=\""), 3);
    assert!(html.contains("in a tree of 2 levels, drawn by level"));
    assert!(html.contains("id=\"hops\""), "the hop histogram");
    let l = load(&bin, &dir.join("648.html"), "cluster-648");
    assert_clean(&l, 54);
    // The halves of the 648 cables in the heat map shown.
    let shown = l
        .dom
        .split("data-heat=\"a2a\"")
        .nth(1)
        .unwrap()
        .split("</g>")
        .next()
        .unwrap();
    assert_eq!(count(shown, "<line "), 2 * 36 * 18);
}

#[test]
fn a_real_dump_with_aggregation_nodes_marks_them() {
    let Some(bin) = chromium("a_real_dump_with_aggregation_nodes_marks_them") else {
        return;
    };
    let dir = temp_dir("dgx");
    let program = dir.join("dgx.weft");
    let dump = root().join("tests/fixtures/real/topograph-ndr-dgx.ibnetdiscover");
    let o = weft(&[
        "import",
        dump.to_str().unwrap(),
        "-o",
        program.to_str().unwrap(),
        "--name",
        "dgx",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let html = page(
        &["report", program.to_str().unwrap()],
        &dir.join("dgx.html"),
    );
    // Its 40 SHARP aggregation nodes are service nodes, drawn as such under their switches;
    // the leaves wear their hosts' rail.
    assert_eq!(count(&html, "class=\"svc\""), 40);
    assert!(html.contains("(aggregation)</title>"));
    assert!(
        html.contains("rail 0") && html.contains("rail 3"),
        "rails in the legend"
    );
    let l = load(&bin, &dir.join("dgx.html"), "ndr-dgx-imported");
    assert_clean(&l, 40);
}

#[test]
fn a_ring_under_min_hop_shows_its_credit_loops() {
    let Some(bin) = chromium("a_ring_under_min_hop_shows_its_credit_loops") else {
        return;
    };
    let dir = temp_dir("ring");
    let file = dir.join("ring.weft");
    std::fs::write(
        &file,
        "use std::hardware::{sb7800, connectx5}\nuse std::topology::ring\nfabric r {\n    topology = ring(n: 4, switch: sb7800, hca: connectx5)\n    routing { engine = minhop }\n}\n",
    )
    .unwrap();
    let html = page(&["report", file.to_str().unwrap()], &dir.join("ring.html"));
    // Two credit loops (one each way round), each a closed cycle through the four switches
    // and a finding that focuses it.
    assert_eq!(count(&html, "<path class=\"loop\""), 2);
    for loop_path in html.split("<path class=\"loop\" d=\"").skip(1) {
        let d = loop_path.split('"').next().unwrap();
        assert_eq!(
            (count(d, "M"), count(d, "L"), d.ends_with('Z')),
            (1, 3, true),
            "{d}"
        );
    }
    assert_eq!(count(&html, "data-finding=\""), 2);
    assert!(html.contains("weft::credit_loop"));
    assert!(html.contains("<span class=\"bad\">violated</span>"));
    assert!(html.contains("not a tree: drawn with a force layout"));
    let l = load(&bin, &dir.join("ring.html"), "ring-minhop-credit-loops");
    assert_clean(&l, 4);
    assert_eq!(count(&l.dom, "class=\"ov\""), 2);
    // Focusing the second finding (as a click on it does) shows its loop alone.
    let l = load_at(
        &bin,
        &dir.join("ring.html"),
        "#finding-1",
        "ring-minhop-finding-1",
    );
    assert_clean(&l, 4);
    assert!(
        l.dom.contains("class=\"topo focus\""),
        "the drawing focused"
    );
    assert_eq!(count(&l.dom, "class=\"ov\""), 1);
    assert_eq!(count(&l.dom, "class=\"ov on\" data-f=\"1\""), 1);
}

#[test]
fn a_plan_is_a_timeline_on_the_fabric() {
    let Some(bin) = chromium("a_plan_is_a_timeline_on_the_fabric") else {
        return;
    };
    let dir = temp_dir("plan");
    let tree = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric small {\n    topology = fat_tree(levels: 2, radix: 8, switch: sb7800, hca: connectx5)\n    routing { engine = fat_tree, switch_to_switch = sftree }\n    sm on leaf1\n";
    let old = dir.join("old.weft");
    std::fs::write(&old, format!("{tree}}}\n")).unwrap();
    let new = dir.join("new.weft");
    std::fs::write(
        &new,
        format!("{tree}    faults {{ link leaf1.p[5] down }}\n}}\n"),
    )
    .unwrap();
    let o = weft(&[
        "build",
        old.to_str().unwrap(),
        "-o",
        dir.join("old").to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let state = dir.join("old/state.json");
    // A build directory and its state.json report the same page as the source, but for
    // where the tables come from.
    let from_dir = page(
        &["report", dir.join("old").to_str().unwrap()],
        &dir.join("dir.html"),
    );
    let from_state = page(
        &["report", state.to_str().unwrap()],
        &dir.join("state.html"),
    );
    let from_source = page(&["report", old.to_str().unwrap()], &dir.join("source.html"));
    let body = |h: &str| h.split("</p>").skip(1).collect::<Vec<_>>().join("</p>");
    assert!(from_dir.contains("tables read from"));
    assert_eq!(body(&from_dir), body(&from_state));
    assert_eq!(
        count(&from_source, "class=\"sw"),
        count(&from_dir, "class=\"sw")
    );
    let out = dir.join("plan.html");
    let html = page(
        &[
            "plan",
            "--from",
            state.to_str().unwrap(),
            new.to_str().unwrap(),
            "--full",
        ],
        &out,
    );
    // The same plan in words: its steps, each a box of the timeline and a section.
    let o = weft(&[
        "plan",
        "--from",
        state.to_str().unwrap(),
        new.to_str().unwrap(),
        "--full",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let steps = v["steps"].as_array().unwrap().len();
    assert!(steps >= 2, "{v}");
    assert_eq!(count(&html, "<div class=\"step"), steps);
    assert_eq!(count(&html, "<details class=\"stepd\""), steps);
    // An outage: stated, and its steps marked.
    assert!(html.contains("outage (break-before-make)"));
    assert!(count(&html, "<div class=\"step outage\"") >= 1);
    // Every step names the switches it writes, drawn with those ids.
    for sw in html.split("data-sw=\"").skip(1) {
        let ids = sw.split('"').next().unwrap();
        assert!(!ids.is_empty());
        for id in ids.split(' ') {
            assert!(
                html.contains(&format!("data-id=\"{id}\"")),
                "switch {id} not drawn"
            );
        }
    }
    // The cable down is drawn dashed.
    assert!(html.contains("class=\"cable down\""));
    // No plan file where the page went.
    assert!(html.starts_with("<!DOCTYPE html>"));
    let l = load(&bin, &out, "plan-outage");
    assert_clean(&l, 12);
    assert_eq!(count(&l.dom, " touched\""), 0);
    // Choosing step 1 (as a click on it does) outlines the switches it writes, and opens it.
    let first: Vec<&str> = html
        .split("data-step=\"1\" data-sw=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .split(' ')
        .collect();
    let l = load_at(&bin, &out, "#step-1", "plan-outage-step-1");
    assert_clean(&l, 12);
    assert_eq!(count(&l.dom, " touched\""), first.len(), "{first:?}");
    for id in &first {
        let at = l.dom.find(&format!("data-id=\"{id}\"")).unwrap();
        let tag = &l.dom[l.dom[..at].rfind('<').unwrap()..at];
        assert!(tag.contains("touched"), "switch {id}: {tag}");
    }
    assert!(l
        .dom
        .contains("<details class=\"stepd\" id=\"step-1\" open=\"\">"));
}

/// The 11 664-node example: grouped by pod, under 10 MB, loaded by Chromium (its time
/// printed; bounded only generously).
#[test]
fn the_11664_node_example_is_grouped_and_small() {
    if !crate::support::big_examples() {
        eprintln!("SKIP the_11664_node_example_is_grouped_and_small: set WEFT_BIG_EXAMPLES=1 (release mode)");
        return;
    }
    let Some(bin) = chromium("the_11664_node_example_is_grouped_and_small") else {
        return;
    };
    let dir = temp_dir("11664");
    let out = dir.join("11664.html");
    let start = Instant::now();
    let html = page(
        &[
            "report",
            root().join("examples/cluster-11664.weft").to_str().unwrap(),
        ],
        &out,
    );
    let made = start.elapsed().as_secs_f64();
    let bytes = html.len();
    println!("11 664-node report: {bytes} bytes, made in {made:.2} s (compile, route, measure, verify, draw)");
    assert!(bytes < 10_000_000, "{bytes} bytes");
    let groups = count(&html, "class=\"agg\"");
    let switches = count(&html, "class=\"sw") - count(&html, "class=\"sw-c");
    println!("  {groups} group boxes, {switches} switches in the groups");
    assert!((10..=130).contains(&groups), "{groups} groups");
    assert_eq!(count(&html, "<details class=\"group\""), groups);
    let l = load(&bin, &out, "cluster-11664");
    println!("  loaded by Chromium (DOM dumped) in {:.2} s", l.secs);
    assert!(l.secs < 60.0, "{} s", l.secs);
    assert_clean(&l, switches);
}

#[test]
fn failed_routes_are_placed_where_they_fail() {
    let Some(bin) = chromium("failed_routes_are_placed_where_they_fail") else {
        return;
    };
    let dir = temp_dir("failed");
    let out = dir.join("lab16");
    let o = weft(&[
        "build",
        root().join("examples/lab-16.weft").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // A cable the tables use goes down after they were written (the fingerprint, which
    // would refuse the edit, dropped).
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("state.json")).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("fingerprint");
    let names: std::collections::BTreeMap<String, String> = v["fabric"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["guid"].as_str().unwrap().to_owned(),
                n["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let link = v["fabric"]["links"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|l| {
            l.get("state").is_none()
                && names[l["a"][0].as_str().unwrap()].starts_with("leaf")
                && names[l["b"][0].as_str().unwrap()].starts_with("spine")
        })
        .unwrap();
    link["state"] = "down".into();
    let broken = dir.join("broken.json");
    std::fs::write(&broken, v.to_string()).unwrap();
    let html = page(
        &["report", broken.to_str().unwrap()],
        &dir.join("broken.html"),
    );
    assert!(html.contains("<th>connected</th><td><span class=\"bad\">violated</span>"));
    // Each failure pattern: its first witness drawn up to a ✗ where it fails.
    let findings = count(&html, "data-finding=\"");
    assert!(findings >= 2, "{findings}");
    assert_eq!(count(&html, "<path class=\"x\""), findings);
    assert!(count(&html, "<path class=\"route\"") >= 1);
    assert!(html.contains("an entry for a port whose link is down"));
    let l = load(&bin, &dir.join("broken.html"), "lab-16-failed-routes");
    assert_clean(&l, 6);
}

/// A two-level fabric with explicit cables, for `weft diff` pages.
const CABLED: &str = r#"use std::hardware::{sb7800, connectx5}

fabric small {
    topology {
        switch spine : sb7800 { level = 2 }
        switch leaf[1..=2] : sb7800 { level = 1 }
        hca host[1..=4] : connectx5
        link leaf[1].p[33] <-> spine.p[1]
        link leaf[2].p[33] <-> spine.p[2]
        link host[1].p[1] <-> leaf[1].p[1]
        link host[2].p[1] <-> leaf[1].p[2]
        link host[3].p[1] <-> leaf[2].p[1]
        link host[4].p[1] <-> leaf[2].p[2]
    }
}
"#;

/// [`CABLED`] with `edits` (from, to) made, written in `dir` as `name`; its path.
fn cabled(dir: &Path, name: &str, edits: &[(&str, &str)]) -> PathBuf {
    let mut t = CABLED.to_owned();
    for (from, to) in edits {
        assert!(t.contains(from), "{from}");
        t = t.replacen(from, to, 1);
    }
    let p = dir.join(name);
    std::fs::write(&p, t).unwrap();
    p
}

/// Host 1's and host 3's cables swapped between the leaves.
const SWAPPED: [(&str, &str); 2] = [
    (
        "link host[1].p[1] <-> leaf[1].p[1]",
        "link host[1].p[1] <-> leaf[2].p[1]",
    ),
    (
        "link host[3].p[1] <-> leaf[2].p[1]",
        "link host[3].p[1] <-> leaf[1].p[1]",
    ),
];

/// `weft diff DESIGN FOUND --format html -o OUT`, which must exit `code`; the page.
fn diff_page(design: &Path, found: &Path, out: &Path, code: i32) -> String {
    let o = weft(&[
        "diff",
        design.to_str().unwrap(),
        found.to_str().unwrap(),
        "--format",
        "html",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(code), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty(), "the page went to the file");
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn a_cabling_diff_places_every_difference_on_the_fabric() {
    let Some(bin) = chromium("a_cabling_diff_places_every_difference_on_the_fabric") else {
        return;
    };
    let dir = temp_dir("diff");
    let design = cabled(&dir, "design.weft", &[]);
    // Two cables swapped, one removed (down), one at 1x (the design's ports are 4x).
    let found = cabled(
        &dir,
        "found.weft",
        &[
            SWAPPED[0],
            SWAPPED[1],
            (
                "link host[4].p[1] <-> leaf[2].p[2]\n    }\n",
                "link host[4].p[1] <-> leaf[2].p[2] { width = 1x }\n    }\n    faults {\n        link host[2].p[1] down\n    }\n",
            ),
        ],
    );
    let out = dir.join("diff.html");
    let html = diff_page(&design, &found, &out, 1);
    // The same differences as the JSON document's findings, in its order.
    let o = weft(&[
        "diff",
        design.to_str().unwrap(),
        found.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let codes: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "weft::cable_miswired",
            "weft::cable_miswired",
            "weft::cable_missing",
            "weft::cable_width"
        ]
    );
    for (k, code) in codes.iter().enumerate() {
        let row = html
            .split(&format!("<tr id=\"finding-{k}\">"))
            .nth(1)
            .unwrap();
        let row = row.split("</tr>").next().unwrap();
        assert!(row.contains(code), "{row}");
        assert!(row.contains(&format!("data-finding=\"{k}\"")), "{row}");
    }
    // Each swapped cable: its two ends' cables as found, and the cable as designed
    // (dashed), both ends labelled with what they should join.
    assert_eq!(count(&html, "<line class=\"miswired\""), 4);
    assert_eq!(count(&html, "<line class=\"expect\""), 2);
    assert!(html.contains("host1/1 ↔ leaf2/1, should join leaf1/1"));
    assert!(html.contains("leaf1/1 ↔ host3/1, should join host1/1"));
    assert_eq!(count(&html, "<line class=\"missing\""), 1);
    assert!(html.contains("missing: host2/1 – leaf1/2"));
    assert_eq!(count(&html, "<line class=\"rate\""), 1);
    assert!(html.contains("1x (design 4x)"));
    // The hosts named are drawn; the verdict says how many differ.
    assert_eq!(count(&html, "<circle class=\"end\""), 4);
    assert!(html.contains("4 difference(s) from the design."));
    let l = load(&bin, &out, "diff-cabling");
    assert_clean(&l, 3);
    assert_eq!(count(&l.dom, "class=\"ov\""), 4);
    assert_eq!(count(&l.dom, "data-finding=\""), 4);
    // Focusing the missing cable (as a click on it does) shows it alone.
    let l = load_at(&bin, &out, "#finding-2", "diff-cabling-finding-2");
    assert_clean(&l, 3);
    assert!(l.dom.contains("class=\"topo focus\""));
    assert_eq!(count(&l.dom, "class=\"ov\""), 3);
    assert_eq!(count(&l.dom, "class=\"ov on\" data-f=\"2\""), 1);
    // The same fabric: no difference, nothing placed.
    let same = dir.join("same.html");
    let html = diff_page(&design, &design, &same, 0);
    assert!(html.contains("No difference:"));
    assert_eq!(count(&html, "class=\"ov\""), 0);
    let l = load(&bin, &same, "diff-cabling-same");
    assert_clean(&l, 3);
}

#[test]
fn a_diff_page_is_a_snapshot_and_the_same_each_time() {
    let dir = temp_dir("diff-snapshot");
    let design = cabled(&dir, "design.weft", &[]);
    let found = cabled(&dir, "swapped.weft", &SWAPPED);
    let a = diff_page(&design, &found, &dir.join("a.html"), 1);
    let b = diff_page(&design, &found, &dir.join("b.html"), 1);
    assert!(a == b, "two runs, two pages");
    // Without -o, the page on stdout (and the exit code unchanged).
    let o = weft(&[
        "diff",
        design.to_str().unwrap(),
        found.to_str().unwrap(),
        "--format",
        "html",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stdout) == a, "stdout is the page");
    // An input that cannot be read: exit 2, said for people on stderr.
    let o = weft(&[
        "diff",
        design.to_str().unwrap(),
        dir.join("absent.weft").to_str().unwrap(),
        "--format",
        "html",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert!(
        text(&o.stderr).contains("absent.weft"),
        "{}",
        text(&o.stderr)
    );
    let lines = a
        .replace("><", ">\n<")
        .replace(&dir.display().to_string(), "[dir]");
    insta::assert_snapshot!("diff_swapped_html", lines);
    // The same fabric's page says there is no difference.
    let same = diff_page(&design, &design, &dir.join("same.html"), 0);
    assert!(same.contains("<p class=\"ok\" id=\"verdict\">No difference: "));
    assert!(same.contains("No findings: nothing to place on the drawing."));
}

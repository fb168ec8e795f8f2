#[test]
fn scratch() {
    let tree = "use std::hardware::{sb7800, connectx5}\nuse std::topology::fat_tree\nfabric f {\n    topology = fat_tree(levels: 2, radix: 4, switch: sb7800, hca: connectx5)\n";
    let old = weft_tests::compiled(&format!("{tree}    tenant alice {{ pkey = 0x8001, hosts = [cn001, cn002] }}\n    tenant bob {{ pkey = 0x8002, hosts = [cn003, cn004] }}\n}}\n"));
    let iso = weft_verifier::isolation::check(&old, 10);
    eprintln!("{:?}\n{:#?}", iso.outcome, iso.breaches);
}

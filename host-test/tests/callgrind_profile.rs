//! `toolseal bench --callgrind` splits the `.wasm`'s instructions into the guest's compiled
//! code and the host around it by reading callgrind's profile: the self cost of functions of
//! object `???`, never the inclusive cost of calls, with callgrind's name compression.

use toolseal::bench::callgrind::guest_instructions;

const PROFILE: &str = "\
# callgrind format
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 10000

ob=(1) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(1) ???
fn=(1) memcpy
0 500
cob=(2) ???
cfn=(2) 0x0000000004f4a32c
calls=3 0
0 4000

ob=(2)
fl=(2) ???
fn=(2)
0 1900
+2 100
cfn=(3) 0x0000000004f13800
calls=102 0
0 60500
-1 7

fn=(3)
0 12600
cob=(1)
cfn=(1)
calls=1 0
0 500

ob=(3) /work/main/target/release/toolseal
fl=(3) ???
fn=(4) toolseal::bench::timing::repeat
0 900
cob=(2)
cfn=(2)
calls=1 0
0 64607
* 3
";

#[test]
fn guest_cost_is_the_self_cost_of_code_without_an_object() {
    // 1900 + 100 + 7 (fn 2) + 12600 (fn 3); the lines after `calls=` are inclusive costs.
    assert_eq!(guest_instructions(PROFILE), Some(14_607));
}

#[test]
fn profiles_of_another_shape_are_refused() {
    let two_events = PROFILE.replace("events: Ir", "events: Ir Dr");
    assert_eq!(guest_instructions(&two_events), None);
    let instr_positions = PROFILE.replace("positions: line", "positions: instr line");
    assert_eq!(guest_instructions(&instr_positions), None);
    let no_events = PROFILE.replace("events: Ir\n", "");
    assert_eq!(guest_instructions(&no_events), None);
    let unknown_object = PROFILE.replace("ob=(2)\n", "ob=(9)\n");
    assert_eq!(guest_instructions(&unknown_object), None);
    let bad_cost = PROFILE.replace("+2 100", "+2 lots");
    assert_eq!(guest_instructions(&bad_cost), None);
}

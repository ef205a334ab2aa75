//! The floor filter's configuration: exactly two behaviours, anything else refused (Envoy
//! then refuses the listener instead of measuring a filter that does not run).

use toolseal_bench_floor::Behaviour;

#[test]
fn the_two_behaviours_are_named_by_the_configuration() {
    assert_eq!(Behaviour::parse(b"empty"), Some(Behaviour::Empty));
    assert_eq!(Behaviour::parse(b" read\n"), Some(Behaviour::Read));
}

#[test]
fn any_other_configuration_is_refused() {
    for config in [&b""[..], b"Read", b"{}", b"read empty", b"\xff"] {
        assert_eq!(Behaviour::parse(config), None, "{config:?}");
    }
}

//! A small command-line parser: `--flag value`, `--flag=value`, boolean `--flag`, `--` to
//! end flags, positionals in order. Unknown flags are refused (a typo must not be read as a
//! file name).

use crate::input_error::InputError;

/// Parsed arguments of one subcommand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Args {
    /// `(flag, value)` in order; boolean flags have no value.
    pub flags: Vec<(String, Option<String>)>,
    /// Positional arguments in order.
    pub positionals: Vec<String>,
}

impl Args {
    /// Parses `args` (after the subcommand): `with_value` flags take a value, `switches`
    /// do not.
    pub fn parse(
        args: &[String],
        with_value: &[&str],
        switches: &[&str],
    ) -> Result<Self, InputError> {
        let mut parsed = Args::default();
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            if arg == "--" {
                parsed.positionals.extend(iter.by_ref().cloned());
                break;
            }
            let Some(flag) = arg.strip_prefix("--") else {
                parsed.positionals.push(arg.clone());
                continue;
            };
            let (name, inline) = match flag.split_once('=') {
                Some((name, value)) => (name, Some(value.to_owned())),
                None => (flag, None),
            };
            if with_value.contains(&name) {
                let value = match inline {
                    Some(v) => v,
                    None => iter
                        .next()
                        .cloned()
                        .ok_or_else(|| InputError(format!("--{name} needs a value")))?,
                };
                parsed.flags.push((name.to_owned(), Some(value)));
            } else if switches.contains(&name) && inline.is_none() {
                parsed.flags.push((name.to_owned(), None));
            } else {
                return Err(InputError(format!(
                    "unknown option --{name} (see `toolseal help`)"
                )));
            }
        }
        Ok(parsed)
    }

    /// The last value of `--name`.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .and_then(|(_, v)| v.as_deref())
    }

    /// Every value of `--name`, in order (a repeatable flag).
    pub fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.flags
            .iter()
            .filter(move |(n, _)| n == name)
            .filter_map(|(_, v)| v.as_deref())
    }

    /// Whether the switch `--name` was given.
    pub fn has(&self, name: &str) -> bool {
        self.flags.iter().any(|(n, _)| n == name)
    }
}

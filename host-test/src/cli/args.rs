//! What every subcommand's argument parsing shares. Each subcommand walks its own arguments
//! with `lexopt` (`--flag value`, `--flag=value`, `-h`/`--help`, `--` ends the options) and
//! keeps its usage text beside that loop; this module says how lexopt's errors read, and
//! reads values that must be text.
//!
//! Main design decision: arguments stay `OsString` until a value is used. A path may be any
//! bytes the OS allows; a value that must be text (a server id, a number) that is not UTF-8
//! is an invocation error naming the option, never a panic. Unknown options are refused (a
//! typo must not be read as a file name).

use crate::input_error::InputError;
use lexopt::{Arg, Parser};
use std::ffi::OsString;

/// What a subcommand's arguments ask for: run with the parsed options, or print its usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed<T> {
    /// Run with these options.
    Run(T),
    /// `-h` or `--help` was given: print the usage and exit 0.
    Help,
}

/// A lexopt parser over a subcommand's arguments (after the subcommand's name).
pub fn parser(args: &[OsString]) -> Parser {
    Parser::from_args(args.iter().cloned())
}

/// Whether `arg` asks for help.
pub fn is_help(arg: &Arg<'_>) -> bool {
    matches!(arg, Arg::Short('h') | Arg::Long("help"))
}

/// lexopt's error in this command's words, pointing at `toolseal COMMAND --help`.
pub fn invocation_error(command: &str, error: lexopt::Error) -> InputError {
    let why = match error {
        lexopt::Error::MissingValue {
            option: Some(option),
        } => format!("{option} needs a value"),
        lexopt::Error::MissingValue { option: None } => "a value is missing".to_owned(),
        lexopt::Error::UnexpectedOption(option) => format!("unknown option {option}"),
        lexopt::Error::UnexpectedArgument(value) => format!("unexpected argument {value:?}"),
        lexopt::Error::UnexpectedValue { option, value } => {
            format!("{option} takes no value (got {value:?})")
        }
        lexopt::Error::NonUnicodeValue(value) => {
            format!("argument {value:?} is not valid UTF-8")
        }
        lexopt::Error::ParsingFailed { value, error } => format!("{value:?}: {error}"),
        lexopt::Error::Custom(error) => error.to_string(),
    };
    InputError(format!("{why} (see `toolseal {command} --help`)"))
}

/// The next value of `option` as text; a value that is not UTF-8 is an error naming it.
pub fn text_value(parser: &mut Parser, option: &str) -> Result<String, lexopt::Error> {
    parser.value()?.into_string().map_err(|value| {
        lexopt::Error::from(format!("{option} needs a UTF-8 value, not {value:?}"))
    })
}

//! The transport a window uses: named by its info, else by the environment, else the
//! launch mode's default — honoured, refused or fallen back from by one rule
//! ([`chosen_transport`]).

use rma_core::{Error, Flavor, LaunchMode, Result, WinInfo};

/// Environment variable choosing the transport of windows whose info does not name one:
/// a process-wide default, so where the transport it names cannot serve a window, that
/// window uses its launch mode's default and a `tracing` warning says so
/// ([`chosen_transport`]).
pub const ENV_TRANSPORT: &str = "RMA_TRANSPORT";

/// The transports of windows in rma's own worlds (threads, or processes started by
/// `rmarun`), sharing memory on one node.
pub const TRANSPORTS: &[&str] = rma_shm::TRANSPORTS;

/// The transport of every window in a world started by an MPI launcher: the system
/// MPI library's RMA.
pub const MPI_TRANSPORT: &str = rma_mpi::MPI_TRANSPORT;

/// The transport name a window of `flavor` with this info uses in a world of `mode`.
///
/// The rule (the same for `Window::allocate` and `Window::create` of rma-win):
///
/// 1. A transport named by the window's info (`rma_transport`) is a request: the
///    window uses it, or creating it fails with class RMA_FLAVOR, saying why that
///    transport cannot serve this window and which would. A name can fail so in three
///    ways: `atomic` for a created window with ranks as processes (the origin would
///    have to reach another process's private memory), `atomic` or `queued` under an
///    MPI launcher (they need ranks sharing memory on one node, started by rmarun or
///    as threads), and `mpi` outside one.
/// 2. Otherwise the [`ENV_TRANSPORT`] environment variable is a process-wide default:
///    where the transport it names cannot serve this window, the window uses the
///    launch mode's default (3) instead and a `tracing` warning says so; it does not
///    fail.
/// 3. Otherwise the launch mode's default: `mpi` under an MPI launcher; `queued` for a
///    created window with ranks as processes; `atomic` everywhere else.
///
/// A name that is no transport at all, from the info or from the environment, is an
/// error of class ARG listing the transports. An environment variable that is set but
/// empty (or only blanks) names nothing: it counts as unset.
pub fn chosen_transport(info: &WinInfo, mode: LaunchMode, flavor: Flavor) -> Result<String> {
    let env = std::env::var(ENV_TRANSPORT).ok();
    let choice = choose(info.transport.as_deref(), env.as_deref(), mode, flavor)?;
    if let Some(why) = &choice.env_ignored {
        tracing::warn!(
            "{ENV_TRANSPORT}={} ignored for this window, which uses the {} transport: {why}",
            env.as_deref().unwrap_or_default(),
            choice.name
        );
    }
    Ok(choice.name.to_owned())
}

/// What [`choose`] decided.
#[derive(Debug, PartialEq, Eq)]
struct Choice {
    /// The transport the window uses.
    name: &'static str,
    /// Why the transport the environment names could not serve the window, when the
    /// window fell back to the launch mode's default.
    env_ignored: Option<String>,
}

/// [`chosen_transport`] with the environment variable's value passed in.
fn choose(
    named: Option<&str>,
    env: Option<&str>,
    mode: LaunchMode,
    flavor: Flavor,
) -> Result<Choice> {
    let fallback = default_transport(mode, flavor);
    if let Some(name) = named {
        let name = known(name)?;
        return match unusable(name, mode, flavor) {
            None => Ok(Choice {
                name,
                env_ignored: None,
            }),
            Some(why) => Err(Error::Flavor {
                reason: format!("{why}; {}", alternatives(name, mode, flavor)),
            }),
        };
    }
    // `RMA_TRANSPORT=` (set, but empty) is a common way to clear a variable: unset
    let Some(name) = env.map(str::trim).filter(|e| !e.is_empty()) else {
        return Ok(Choice {
            name: fallback,
            env_ignored: None,
        });
    };
    let name = known(name)?;
    Ok(match unusable(name, mode, flavor) {
        None => Choice {
            name,
            env_ignored: None,
        },
        Some(why) => Choice {
            name: fallback,
            env_ignored: Some(why),
        },
    })
}

/// The transport of a window whose info and environment name none.
fn default_transport(mode: LaunchMode, flavor: Flavor) -> &'static str {
    match (mode, flavor) {
        (LaunchMode::Mpi, _) => MPI_TRANSPORT,
        (LaunchMode::Processes, Flavor::Create) => "queued",
        _ => "atomic",
    }
}

/// `name` as the name of a transport of rma's own backends (whether or not it could
/// serve a given window), or an error of class ARG listing them: the check a
/// `rma_transport` value passes at a window's creation, and at its `set_info`.
pub fn known_transport(name: &str) -> Result<&'static str> {
    known(name)
}

/// `name` as one of rma's transport names, or an error of class ARG listing them.
fn known(name: &str) -> Result<&'static str> {
    TRANSPORTS
        .iter()
        .chain([&MPI_TRANSPORT])
        .find(|&&t| t == name)
        .copied()
        .ok_or_else(|| Error::UnknownTransport {
            name: name.to_owned(),
            available: format!("{}, {MPI_TRANSPORT} (under mpiexec)", TRANSPORTS.join(", ")),
        })
}

/// Why the transport `name` cannot serve a window of `flavor` in a world of `mode`;
/// `None` when it can.
fn unusable(name: &str, mode: LaunchMode, flavor: Flavor) -> Option<String> {
    match mode {
        LaunchMode::Mpi if name == MPI_TRANSPORT => None,
        LaunchMode::Mpi => Some(format!(
            "under an MPI launcher every window uses the {MPI_TRANSPORT} transport: the {name} \
             transport runs only in rma's own worlds (ranks started by rmarun, or as threads, \
             sharing memory on one node)"
        )),
        _ if name == MPI_TRANSPORT => Some(format!(
            "the {MPI_TRANSPORT} transport needs a world started by an MPI launcher (mpiexec, \
             mpirun) from a build with the mpi feature; this world runs as {mode}"
        )),
        LaunchMode::Processes if flavor == Flavor::Create && name == "atomic" => Some(
            "with ranks as processes a window created over a caller's buffer cannot use the \
             atomic transport (other processes cannot reach this process's memory)"
                .to_owned(),
        ),
        _ => None,
    }
}

/// What would work instead of `name`, which cannot serve a window of `flavor` in
/// `mode`: the transports that can, naming none, and for `atomic` over a caller's
/// buffer, allocating the window instead.
fn alternatives(name: &str, mode: LaunchMode, flavor: Flavor) -> String {
    let usable: Vec<String> = TRANSPORTS
        .iter()
        .chain([&MPI_TRANSPORT])
        .filter(|&&t| unusable(t, mode, flavor).is_none())
        .map(|t| format!("rma_transport={t}"))
        .collect();
    let usable_names = usable.join(" or ");
    if flavor == Flavor::Create && unusable(name, mode, Flavor::Allocate).is_none() {
        format!("use {usable_names}, name no transport, or Window::allocate")
    } else if usable.len() == 1 {
        format!("use {usable_names} or name no transport")
    } else {
        format!("use {usable_names}, or name no transport")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rma_core::{ErrorClass, Info};

    const MODES: [LaunchMode; 3] = [LaunchMode::Threads, LaunchMode::Processes, LaunchMode::Mpi];
    const FLAVORS: [Flavor; 2] = [Flavor::Allocate, Flavor::Create];

    fn info(name: &str) -> WinInfo {
        WinInfo::from_info(&Info::new().with("rma_transport", name)).expect("valid info")
    }

    /// The transport a window named `name` in its info gets, or the error's class and
    /// message.
    fn named(name: &str, mode: LaunchMode, flavor: Flavor) -> Result<&'static str> {
        let choice = choose(Some(name), None, mode, flavor)?;
        assert_eq!(choice.env_ignored, None, "an info name never falls back");
        Ok(choice.name)
    }

    #[test]
    fn a_named_transport_is_used_where_it_can_serve_the_window() {
        for flavor in FLAVORS {
            assert_eq!(named("mpi", LaunchMode::Mpi, flavor).unwrap(), "mpi");
            for name in ["atomic", "queued"] {
                assert_eq!(named(name, LaunchMode::Threads, flavor).unwrap(), name);
            }
            assert_eq!(
                named("queued", LaunchMode::Processes, flavor).unwrap(),
                "queued"
            );
        }
        assert_eq!(
            named("atomic", LaunchMode::Processes, Flavor::Allocate).unwrap(),
            "atomic"
        );
        // the same through the public function (which also reads the environment,
        // consulted only when the info names no transport)
        assert_eq!(
            chosen_transport(&info("queued"), LaunchMode::Processes, Flavor::Create).unwrap(),
            "queued"
        );
    }

    #[test]
    fn atomic_over_a_created_window_with_processes_is_rma_flavor_naming_why_and_what_works() {
        let e = named("atomic", LaunchMode::Processes, Flavor::Create).unwrap_err();
        assert_eq!(e.class(), ErrorClass::RmaFlavor, "{e}");
        assert_eq!(
            e.to_string(),
            "with ranks as processes a window created over a caller's buffer cannot use the \
             atomic transport (other processes cannot reach this process's memory); use \
             rma_transport=queued, name no transport, or Window::allocate"
        );
        let e =
            chosen_transport(&info("atomic"), LaunchMode::Processes, Flavor::Create).unwrap_err();
        assert_eq!(e.class(), ErrorClass::RmaFlavor, "{e}");
    }

    #[test]
    fn shared_memory_transports_under_an_mpi_launcher_are_rma_flavor() {
        for flavor in FLAVORS {
            for name in ["atomic", "queued"] {
                let e = named(name, LaunchMode::Mpi, flavor).unwrap_err();
                assert_eq!(e.class(), ErrorClass::RmaFlavor, "{e}");
                let msg = e.to_string();
                assert!(
                    msg.contains(&format!("the {name} transport runs only")),
                    "{msg}"
                );
                assert!(
                    msg.ends_with("use rma_transport=mpi or name no transport"),
                    "{msg}"
                );
            }
        }
    }

    #[test]
    fn mpi_outside_an_mpi_launcher_is_rma_flavor_naming_the_transports_that_work() {
        let expect = [
            (
                LaunchMode::Threads,
                Flavor::Allocate,
                "use rma_transport=atomic or rma_transport=queued, or name no transport",
            ),
            (
                LaunchMode::Threads,
                Flavor::Create,
                "use rma_transport=atomic or rma_transport=queued, or name no transport",
            ),
            (
                LaunchMode::Processes,
                Flavor::Allocate,
                "use rma_transport=atomic or rma_transport=queued, or name no transport",
            ),
            (
                LaunchMode::Processes,
                Flavor::Create,
                "use rma_transport=queued or name no transport",
            ),
        ];
        for (mode, flavor, ways) in expect {
            let e = named("mpi", mode, flavor).unwrap_err();
            assert_eq!(e.class(), ErrorClass::RmaFlavor, "{e}");
            let msg = e.to_string();
            assert!(msg.contains("MPI launcher"), "{msg}");
            assert!(msg.contains(&format!("this world runs as {mode}")), "{msg}");
            assert!(msg.ends_with(ways), "{mode} {flavor:?}: {msg}");
        }
    }

    #[test]
    fn unknown_names_are_arg_from_the_info_and_from_the_environment() {
        for mode in MODES {
            for flavor in FLAVORS {
                let e = named("carrier-pigeon", mode, flavor).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Arg, "{e}");
                assert!(e.to_string().contains("atomic, queued, mpi"), "{e}");
                let e = choose(None, Some("carrier-pigeon"), mode, flavor).unwrap_err();
                assert_eq!(e.class(), ErrorClass::Arg, "{e}");
            }
        }
    }

    #[test]
    fn an_empty_environment_variable_is_unset() {
        for mode in MODES {
            for flavor in FLAVORS {
                let unset = choose(None, None, mode, flavor).unwrap();
                for env in ["", " ", "\t\n"] {
                    let choice = choose(None, Some(env), mode, flavor)
                        .unwrap_or_else(|e| panic!("{env:?} {mode} {flavor:?}: {e}"));
                    assert_eq!(choice, unset, "{env:?} {mode} {flavor:?}");
                }
            }
        }
        // a name in the info still decides
        let choice = choose(
            Some("queued"),
            Some(""),
            LaunchMode::Threads,
            Flavor::Create,
        );
        assert_eq!(choice.unwrap().name, "queued");
    }

    #[test]
    fn with_nothing_named_each_launch_mode_has_its_default() {
        let expect = [
            (LaunchMode::Threads, Flavor::Allocate, "atomic"),
            (LaunchMode::Threads, Flavor::Create, "atomic"),
            (LaunchMode::Processes, Flavor::Allocate, "atomic"),
            (LaunchMode::Processes, Flavor::Create, "queued"),
            (LaunchMode::Mpi, Flavor::Allocate, "mpi"),
            (LaunchMode::Mpi, Flavor::Create, "mpi"),
        ];
        for (mode, flavor, name) in expect {
            let choice = choose(None, None, mode, flavor).unwrap();
            assert_eq!(
                choice,
                Choice {
                    name,
                    env_ignored: None
                },
                "{mode} {flavor:?}"
            );
        }
    }

    #[test]
    fn the_environment_is_a_default_that_falls_back_with_a_reason_where_it_cannot_serve() {
        // honoured where it can serve the window
        for (env, mode, flavor) in [
            ("queued", LaunchMode::Threads, Flavor::Allocate),
            ("queued", LaunchMode::Processes, Flavor::Allocate),
            ("atomic", LaunchMode::Processes, Flavor::Allocate),
            ("queued", LaunchMode::Processes, Flavor::Create),
            ("mpi", LaunchMode::Mpi, Flavor::Create),
        ] {
            let choice = choose(None, Some(env), mode, flavor).unwrap();
            assert_eq!(choice.name, env, "{mode} {flavor:?}");
            assert_eq!(choice.env_ignored, None);
        }
        // otherwise the launch mode's default, with the reason for the warning
        for (env, mode, flavor, fallback, why) in [
            (
                "atomic",
                LaunchMode::Processes,
                Flavor::Create,
                "queued",
                "cannot reach",
            ),
            (
                "atomic",
                LaunchMode::Mpi,
                Flavor::Allocate,
                "mpi",
                "runs only in rma's own",
            ),
            (
                "queued",
                LaunchMode::Mpi,
                Flavor::Create,
                "mpi",
                "runs only in rma's own",
            ),
            (
                "mpi",
                LaunchMode::Threads,
                Flavor::Allocate,
                "atomic",
                "MPI launcher",
            ),
            (
                "mpi",
                LaunchMode::Processes,
                Flavor::Create,
                "queued",
                "MPI launcher",
            ),
        ] {
            let choice = choose(None, Some(env), mode, flavor).unwrap();
            assert_eq!(choice.name, fallback, "{env} {mode} {flavor:?}");
            let reason = choice.env_ignored.expect("the fallback has a reason");
            assert!(reason.contains(why), "{reason}");
        }
        // a name in the info wins over the environment, and is never a fallback
        let e = choose(
            Some("atomic"),
            Some("queued"),
            LaunchMode::Processes,
            Flavor::Create,
        )
        .unwrap_err();
        assert_eq!(e.class(), ErrorClass::RmaFlavor, "{e}");
        let choice = choose(
            Some("queued"),
            Some("atomic"),
            LaunchMode::Threads,
            Flavor::Create,
        )
        .unwrap();
        assert_eq!(choice.name, "queued");
    }
}

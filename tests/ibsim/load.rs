//! Loading a fabric on a running ibsim: OpenSM programs the LIDs and LFTs `weft build` wrote
//! (its `file` engine), and `dump_fts` reads them back.

use super::{Ibsim, IbsimError, Limits, Tools};
use std::fs;
use std::path::Path;
use std::time::Duration;

impl Ibsim {
    /// Every switch's LFT as `dump_fts` prints it: `(switch GUID, LID) → port` (retried while
    /// the simulator settles).
    pub fn lfts(&self) -> Result<std::collections::BTreeMap<(u64, u16), u8>, IbsimError> {
        let out = self.run_retrying(
            "dump_fts",
            &[],
            Duration::from_secs(60),
            Duration::from_secs(120),
        )?;
        Ok(crate::parse_fts(&out.stdout))
    }

    /// ibsim running what `weft build` wrote to `build_dir` for `state`: started on the
    /// state's net file (with its console open when `console`, for [`Ibsim::console`]), then
    /// its LIDs and `lfts.dump` loaded by OpenSM ([`Ibsim::load_with_opensm`]).
    pub fn start_built(
        tools: &Tools,
        build_dir: &Path,
        state: &weft_fabric::FabricState,
        console: bool,
    ) -> Result<Ibsim, IbsimError> {
        let net =
            weft_formats::ibnetdiscover::write(&state.fabric, Some(&state.lids)).map_err(|e| {
                IbsimError::Io(
                    "cannot write the net file".to_owned(),
                    std::io::Error::other(e.to_string()),
                )
            })?;
        let sim = Ibsim::start_as(
            tools,
            &net,
            Some(Limits::for_fabric(&state.fabric)),
            console,
        )?;
        match sim.load_with_opensm(&build_dir.join("lfts.dump"), state) {
            Ok(()) => Ok(sim),
            Err(e) => Err(IbsimError::NotLoaded {
                error: Box::new(e),
                log: sim.log(),
            }),
        }
    }

    /// OpenSM, once (`-o`), programs `state`'s LIDs (its `guid2lid` cache) and the LFTs of
    /// `lfts_dump` (its file engine): the fabric then runs what `weft build` wrote.
    pub fn load_with_opensm(
        &self,
        lfts_dump: &Path,
        state: &weft_fabric::FabricState,
    ) -> Result<(), IbsimError> {
        self.load_with_opensm_qos(lfts_dump, state, None)
    }

    /// [`Ibsim::load_with_opensm`], with OpenSM's QoS on and the settings of `conf` (a
    /// build's `opensm.conf`: its SL→VL and VL arbitration tables) when given.
    pub fn load_with_opensm_qos(
        &self,
        lfts_dump: &Path,
        state: &weft_fabric::FabricState,
        conf: Option<&Path>,
    ) -> Result<(), IbsimError> {
        let cache = self.dir.join("osm-cache");
        fs::create_dir_all(&cache)
            .map_err(|e| IbsimError::Io(format!("cannot create {}", cache.display()), e))?;
        fs::write(
            cache.join("guid2lid"),
            weft_formats::opensm::write_guid2lid(state),
        )
        .map_err(|e| IbsimError::Io("cannot write guid2lid".to_owned(), e))?;
        let log = self.dir.join("osm.log");
        let (dump, log_s, cache_s) = (
            lfts_dump.to_string_lossy().into_owned(),
            log.to_string_lossy().into_owned(),
            cache.to_string_lossy().into_owned(),
        );
        let conf_s = conf.map(|c| c.to_string_lossy().into_owned());
        let mut args = vec!["-o", "-R", "file", "-U", &dump, "-f", &log_s];
        if let Some(c) = &conf_s {
            args.extend(["-Q", "-F", c]);
        }
        self.run_env(
            "opensm",
            &args,
            &[("OSM_CACHE_DIR", &cache_s)],
            Duration::from_secs(120),
        )
        .map(|_| ())
    }
}

//! Plugin-defined metrics with Envoy's rules: defining a name twice returns the same id;
//! counters only go up; histograms can be recorded but not read or incremented.

use super::guest::{Guest, HostcallResult, finish, read_lossy, write_u32, write_u64};
use super::types::{MetricType, Status};

/// One metric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metric {
    /// Name as the plugin defined it.
    pub name: String,
    /// Kind.
    pub kind: MetricType,
    /// Current value (counter, gauge) or sum of recorded values (histogram).
    pub value: u64,
    /// Number of values recorded (histogram).
    pub samples: u64,
}

/// The metrics of the VM, addressed by id (index + 1).
#[derive(Debug, Default)]
pub struct Metrics {
    metrics: Vec<Metric>,
}

impl Metrics {
    /// Defines (or finds) a metric and returns its id.
    pub fn define(&mut self, kind: MetricType, name: &str) -> Result<u32, Status> {
        if let Some(index) = self.metrics.iter().position(|m| m.name == name) {
            let same_kind = self.metrics.get(index).is_some_and(|m| m.kind == kind);
            return if same_kind {
                id_of(index)
            } else {
                Err(Status::BadArgument)
            };
        }
        self.metrics.push(Metric {
            name: name.to_owned(),
            kind,
            value: 0,
            samples: 0,
        });
        id_of(self.metrics.len() - 1)
    }

    /// All metrics, in definition order.
    pub fn all(&self) -> &[Metric] {
        &self.metrics
    }

    /// The metric named `name`.
    pub fn by_name(&self, name: &str) -> Option<&Metric> {
        self.metrics.iter().find(|m| m.name == name)
    }

    fn get_mut(&mut self, id: u32) -> Result<&mut Metric, Status> {
        let index = usize::try_from(id)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .ok_or(Status::NotFound)?;
        self.metrics.get_mut(index).ok_or(Status::NotFound)
    }

    /// Adds `offset` (counters: only positive; gauges: either sign).
    pub fn increment(&mut self, id: u32, offset: i64) -> Result<(), Status> {
        let metric = self.get_mut(id)?;
        match metric.kind {
            MetricType::Counter if offset > 0 => {
                metric.value = metric.value.saturating_add(offset.unsigned_abs())
            }
            MetricType::Gauge if offset >= 0 => {
                metric.value = metric.value.saturating_add(offset.unsigned_abs())
            }
            MetricType::Gauge => metric.value = metric.value.saturating_sub(offset.unsigned_abs()),
            MetricType::Counter | MetricType::Histogram => return Err(Status::BadArgument),
        }
        Ok(())
    }

    /// Records `value` (counter: adds, gauge: sets, histogram: adds a sample).
    pub fn record(&mut self, id: u32, value: u64) -> Result<(), Status> {
        let metric = self.get_mut(id)?;
        match metric.kind {
            MetricType::Counter => metric.value = metric.value.saturating_add(value),
            MetricType::Gauge => metric.value = value,
            MetricType::Histogram => {
                metric.value = metric.value.saturating_add(value);
                metric.samples = metric.samples.saturating_add(1);
            }
        }
        Ok(())
    }

    /// Reads a counter or gauge.
    pub fn get(&mut self, id: u32) -> Result<u64, Status> {
        let metric = self.get_mut(id)?;
        match metric.kind {
            MetricType::Counter | MetricType::Gauge => Ok(metric.value),
            MetricType::Histogram => Err(Status::BadArgument),
        }
    }
}

fn id_of(index: usize) -> Result<u32, Status> {
    u32::try_from(index + 1).map_err(|_| Status::InternalFailure)
}

/// `proxy_define_metric(type, name, name_size, *id)`.
pub fn define_metric(
    g: &mut impl Guest,
    kind: u32,
    name_ptr: u32,
    name_len: u32,
    id_ptr: u32,
) -> HostcallResult {
    finish((|| {
        let kind = MetricType::from_u32(kind).ok_or(Status::BadArgument)?;
        let name = read_lossy(g, name_ptr, name_len)?;
        write_u32(g, id_ptr, 0)?;
        let id = g.host().vm.metrics.define(kind, &name)?;
        write_u32(g, id_ptr, id)
    })())
}

/// `proxy_increment_metric(id, offset)`.
pub fn increment_metric(g: &mut impl Guest, id: u32, offset: i64) -> HostcallResult {
    finish(
        g.host()
            .vm
            .metrics
            .increment(id, offset)
            .map_err(Into::into),
    )
}

/// `proxy_record_metric(id, value)`.
pub fn record_metric(g: &mut impl Guest, id: u32, value: u64) -> HostcallResult {
    finish(g.host().vm.metrics.record(id, value).map_err(Into::into))
}

/// `proxy_get_metric(id, *value)`.
pub fn get_metric(g: &mut impl Guest, id: u32, value_ptr: u32) -> HostcallResult {
    finish((|| {
        let value = g.host().vm.metrics.get(id)?;
        write_u64(g, value_ptr, value)
    })())
}

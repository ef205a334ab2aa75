//! Shared data (key → value with a compare-and-swap token) and shared queues, with Envoy's
//! semantics: CAS tokens start at 1 and are never 0; a write to a missing key ignores the
//! CAS it carries (which is why the plugin must seed keys at start); a write with a
//! non-zero CAS that differs from the stored one fails with [`Status::CasMismatch`]. The
//! CAS counter is one for the whole store, as in Envoy. The hostcalls reach the map through
//! a [`super::shared_store::SharedStore`] handle, which several worker VMs may share.

use super::guest::{
    Fail, Guest, HostcallResult, Trap, finish, read_lossy, return_bytes, write_u32,
};
use super::shared_store::Refusal;
use super::types::Status;
use std::collections::{HashMap, VecDeque};

/// The VM-wide key-value store.
#[derive(Debug, Default)]
pub struct SharedData {
    entries: HashMap<Vec<u8>, (Vec<u8>, u32)>,
    last_cas: u32,
}

impl SharedData {
    /// The value and CAS token of `key`.
    pub fn get(&self, key: &[u8]) -> Option<(&[u8], u32)> {
        self.entries.get(key).map(|(v, cas)| (v.as_slice(), *cas))
    }

    /// Stores `value` under `key` unless `cas` is non-zero and differs from the stored
    /// token of an existing key.
    pub fn set(&mut self, key: &[u8], value: &[u8], cas: u32) -> Result<(), Status> {
        if let Some((_, stored)) = self.entries.get(key)
            && cas != 0
            && cas != *stored
        {
            return Err(Status::CasMismatch);
        }
        let next = self.next_cas();
        self.entries.insert(key.to_vec(), (value.to_vec(), next));
        Ok(())
    }

    /// Every stored `(value, cas)`, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &(Vec<u8>, u32)> {
        self.entries.values()
    }

    /// Every key with its `(value, cas)`, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Vec<u8>, &(Vec<u8>, u32))> {
        self.entries.iter()
    }

    /// The CAS token of the last write (0 before any).
    pub fn last_cas(&self) -> u32 {
        self.last_cas
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key is stored.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The next CAS token: 1, 2, ... skipping 0 on wrap-around.
    fn next_cas(&mut self) -> u32 {
        self.last_cas = self.last_cas.wrapping_add(1);
        if self.last_cas == 0 {
            self.last_cas = 1;
        }
        self.last_cas
    }
}

/// `proxy_get_shared_data(key, key_size, *value, *value_size, *cas)`.
pub fn get_shared_data(
    g: &mut impl Guest,
    key_ptr: u32,
    key_len: u32,
    value_ptr_ptr: u32,
    value_size_ptr: u32,
    cas_ptr: u32,
) -> HostcallResult {
    finish((|| {
        let key = g.read(key_ptr, key_len)?;
        let store = g.host().vm.shared_data.clone();
        let (value, cas) = match store.get(&key).map_err(fail)? {
            Some(found) => found,
            None => return Err(Status::NotFound.into()),
        };
        write_u32(g, cas_ptr, 0)?;
        return_bytes(g, &value, value_ptr_ptr, value_size_ptr)?;
        write_u32(g, cas_ptr, cas)
    })())
}

/// `proxy_set_shared_data(key, key_size, value, value_size, cas)`.
pub fn set_shared_data(
    g: &mut impl Guest,
    key_ptr: u32,
    key_len: u32,
    value_ptr: u32,
    value_len: u32,
    cas: u32,
) -> HostcallResult {
    finish((|| {
        let key = g.read(key_ptr, key_len)?;
        let value = g.read(value_ptr, value_len)?;
        let store = g.host().vm.shared_data.clone();
        store.set(&key, &value, cas).map_err(fail)
    })())
}

/// A store refusal as a hostcall failure: a status for the guest, or a trap when the
/// worker's turn never came.
fn fail(refused: Refusal) -> Fail {
    match refused {
        Refusal::Status(status) => Fail::Status(status),
        Refusal::NoTurn(why) => Fail::Trap(Trap(why)),
    }
}

/// One named queue.
#[derive(Debug, Default)]
struct Queue {
    vm_id: String,
    name: String,
    items: VecDeque<Vec<u8>>,
}

/// Shared queues, addressed by id (index + 1).
#[derive(Debug, Default)]
pub struct SharedQueues {
    queues: Vec<Queue>,
}

impl SharedQueues {
    /// The id of the queue `name` of `vm_id`, if registered.
    pub fn resolve(&self, vm_id: &str, name: &str) -> Option<u32> {
        let index = self
            .queues
            .iter()
            .position(|q| q.vm_id == vm_id && q.name == name)?;
        u32::try_from(index + 1).ok()
    }

    /// Registers (or finds) the queue `name` of `vm_id` and returns its id.
    pub fn register(&mut self, vm_id: &str, name: &str) -> Option<u32> {
        if let Some(id) = self.resolve(vm_id, name) {
            return Some(id);
        }
        self.queues.push(Queue {
            vm_id: vm_id.to_owned(),
            name: name.to_owned(),
            items: VecDeque::new(),
        });
        u32::try_from(self.queues.len()).ok()
    }

    fn queue(&mut self, id: u32) -> Option<&mut Queue> {
        let index = usize::try_from(id).ok()?.checked_sub(1)?;
        self.queues.get_mut(index)
    }

    /// Appends to queue `id`.
    pub fn enqueue(&mut self, id: u32, value: Vec<u8>) -> Result<(), Status> {
        self.queue(id)
            .ok_or(Status::NotFound)?
            .items
            .push_back(value);
        Ok(())
    }

    /// Takes the oldest item of queue `id`.
    pub fn dequeue(&mut self, id: u32) -> Result<Vec<u8>, Status> {
        self.queue(id)
            .ok_or(Status::NotFound)?
            .items
            .pop_front()
            .ok_or(Status::Empty)
    }
}

/// `proxy_register_shared_queue(name, name_size, *id)`.
pub fn register_shared_queue(
    g: &mut impl Guest,
    name_ptr: u32,
    name_len: u32,
    id_ptr: u32,
) -> HostcallResult {
    finish((|| {
        let name = read_lossy(g, name_ptr, name_len)?;
        let vm = &mut g.host().vm;
        let vm_id = vm.identity.vm_id.clone();
        let id = vm
            .queues
            .register(&vm_id, &name)
            .ok_or(Status::InternalFailure)?;
        write_u32(g, id_ptr, id)
    })())
}

/// `proxy_resolve_shared_queue(vm_id, vm_id_size, name, name_size, *id)`.
pub fn resolve_shared_queue(
    g: &mut impl Guest,
    vm_ptr: u32,
    vm_len: u32,
    name_ptr: u32,
    name_len: u32,
    id_ptr: u32,
) -> HostcallResult {
    finish((|| {
        let vm_id = read_lossy(g, vm_ptr, vm_len)?;
        let name = read_lossy(g, name_ptr, name_len)?;
        let id = g
            .host()
            .vm
            .queues
            .resolve(&vm_id, &name)
            .ok_or(Status::NotFound)?;
        write_u32(g, id_ptr, id)
    })())
}

/// `proxy_enqueue_shared_queue(id, value, value_size)`.
pub fn enqueue_shared_queue(
    g: &mut impl Guest,
    id: u32,
    value_ptr: u32,
    value_len: u32,
) -> HostcallResult {
    finish((|| {
        let value = g.read(value_ptr, value_len)?;
        g.host().vm.queues.enqueue(id, value).map_err(Fail::Status)
    })())
}

/// `proxy_dequeue_shared_queue(id, *value, *value_size)`.
pub fn dequeue_shared_queue(
    g: &mut impl Guest,
    id: u32,
    value_ptr_ptr: u32,
    value_size_ptr: u32,
) -> HostcallResult {
    finish((|| {
        let value = g.host().vm.queues.dequeue(id)?;
        return_bytes(g, &value, value_ptr_ptr, value_size_ptr)
    })())
}

//! What a round trip to the device costs on this adapter, through wgpu
//! alone (no Kiln kernels): an empty submission, a dispatch, a small and a
//! large read-back into a fresh or a reused mappable buffer, and a
//! buffer's allocation. The prover's query and FRI rounds are a chain of
//! small read-backs, so their latency bounds those rounds.
//!
//! `cargo run --release -p backend-wgpu --example round_trip [large MiB]`
//! (adapter 0; median and minimum of each, in ms).

use std::time::Instant;

fn main() {
    let large_mib: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(512);
    let Some(rig) = Rig::open() else {
        eprintln!("no wgpu adapter");
        std::process::exit(2);
    };
    let (pipeline, small, bind) = rig.counter();
    let large = large_mib << 20;
    let big = rig.storage(large);
    let kept_big = rig.staging(large);

    let mut rows = Timings::default();
    time_submissions(&rig, &mut rows, &pipeline, &bind);
    time_small_reads(&rig, &mut rows, &small);
    rows.time("storage buffer 64 MiB: create, clear, drop", 10, &mut || {
        let b = rig.storage(64 << 20);
        let mut enc = rig.device.create_command_encoder(&Default::default());
        enc.clear_buffer(&b, 0, None);
        rig.queue.submit([enc.finish()]);
        drop(b);
        rig.wait();
    });
    rows.time(&format!("read {large_mib} MiB, fresh staging"), 5, &mut || {
        rig.read(&big, &rig.staging(large), large);
    });
    rows.time(&format!("read {large_mib} MiB, reused staging"), 5, &mut || {
        rig.read(&big, &kept_big, large);
    });
    rows.print();
}

/// An empty submission, and a single dispatch, each waited for.
fn time_submissions(rig: &Rig, rows: &mut Timings, pipeline: &wgpu::ComputePipeline, bind: &wgpu::BindGroup) {
    rows.time("empty submission + wait", 20, &mut || {
        rig.queue.submit([]);
        rig.wait();
    });
    rows.time("one dispatch + wait", 20, &mut || {
        let mut enc = rig.device.create_command_encoder(&Default::default());
        {
            let mut pass = enc.begin_compute_pass(&Default::default());
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bind, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
        rig.queue.submit([enc.finish()]);
        rig.wait();
    });
}

/// A 32-byte read into a fresh, then into a reused, staging buffer.
fn time_small_reads(rig: &Rig, rows: &mut Timings, small: &wgpu::Buffer) {
    rows.time("read 32 bytes, fresh staging", 20, &mut || {
        rig.read(small, &rig.staging(64 << 10), 32);
    });
    // Made after the fresh reads: while any small mappable buffer lives,
    // a fresh one is carved from its memory block instead of a new one.
    let kept_small = rig.staging(64 << 10);
    rows.time("read 32 bytes, reused staging", 20, &mut || {
        rig.read(small, &kept_small, 32);
    });
}

/// Adapter 0's device and queue, with the adapter and instance (dropped
/// after them).
struct Rig {
    device: wgpu::Device,
    queue: wgpu::Queue,
    _adapter: wgpu::Adapter,
    _instance: wgpu::Instance,
}

impl Rig {
    /// The first adapter's device, with the adapter's limits; `None` when
    /// there is no adapter.
    fn open() -> Option<Rig> {
        let instance = wgpu::Instance::new(&wgpu::InstanceDescriptor {
            backends: wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12,
            ..Default::default()
        });
        let adapter = instance.enumerate_adapters(wgpu::Backends::all()).into_iter().next()?;
        let info = adapter.get_info();
        println!("adapter: {} ({:?}, {})", info.name, info.backend, info.driver_info);
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            required_limits: limits.clone(),
            memory_hints: wgpu::MemoryHints::Performance,
            ..Default::default()
        }))
        .expect("device");
        Some(Rig { device, queue, _adapter: adapter, _instance: instance })
    }

    fn wait(&self) {
        self.device.poll(wgpu::PollType::Wait).expect("poll");
    }

    fn storage(&self, bytes: u64) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    fn staging(&self, bytes: u64) -> wgpu::Buffer {
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// Copies `bytes` of `src` into `dst`, maps it and sums what it reads
    /// (so the read is not optimised away).
    fn read(&self, src: &wgpu::Buffer, dst: &wgpu::Buffer, bytes: u64) -> u64 {
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(src, 0, dst, 0, bytes);
        self.queue.submit([enc.finish()]);
        let slice = dst.slice(..bytes);
        slice.map_async(wgpu::MapMode::Read, |r| r.expect("map"));
        self.wait();
        let sum = bytemuck::cast_slice::<u8, u64>(&slice.get_mapped_range()).iter().fold(0u64, |a, &w| a ^ w);
        dst.unmap();
        sum
    }

    /// A kernel adding 1 to each word it runs over, a 4 KiB buffer, and
    /// the binding of one to the other.
    fn counter(&self) -> (wgpu::ComputePipeline, wgpu::Buffer, wgpu::BindGroup) {
        let module = self.device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: None,
            source: wgpu::ShaderSource::Wgsl(
                "@group(0) @binding(0) var<storage, read_write> out: array<u32>;\n\
                 @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>) { out[id.x] += 1u; }"
                    .into(),
            ),
        });
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: None,
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let small = self.storage(4096);
        let bind = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: small.as_entire_binding() }],
        });
        (pipeline, small, bind)
    }
}

/// Each timing's name and its repetitions' milliseconds, in order.
#[derive(Default)]
struct Timings(Vec<(String, Vec<f64>)>);

impl Timings {
    /// Runs `f` once untimed, then `reps` times timed.
    fn time(&mut self, name: &str, reps: usize, f: &mut dyn FnMut()) {
        f();
        let ms: Vec<f64> = (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64() * 1e3
            })
            .collect();
        self.0.push((name.to_string(), ms));
    }

    fn print(self) {
        for (name, mut ms) in self.0 {
            ms.sort_by(f64::total_cmp);
            println!("{name:<45} median {:>9.3} ms   min {:>9.3} ms", ms[ms.len() / 2], ms[0]);
        }
    }
}

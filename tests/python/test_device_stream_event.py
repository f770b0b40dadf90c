import pytest

import bronze


def test_device_queries():
    assert bronze.is_available()
    assert bronze.is_available("cpu")
    assert bronze.device_count("cpu") == 1
    assert str(bronze.current_device()) == "cpu:0"
    props = bronze.get_device_properties("cpu")
    assert props.total_memory > 0 and props.host_visible
    assert props.recommended_max_memory == bronze.recommended_max_memory()
    assert bronze.device("cpu") == "cpu:0"
    with pytest.raises(ValueError):
        bronze.device("tpu")


def test_equality_with_other_values_is_false_never_an_error():
    # N25: device == None, device == 5, `dev in [None, ...]` and Stream() == 5
    # raised TypeError; Python's own objects answer False.
    cpu, s = bronze.device("cpu"), bronze.Stream()
    for other in (None, 5, 2.5, "gpu", "\udcff", object()):
        assert not cpu == other and cpu != other
        assert not s == other and s != other
    assert cpu in [None, "cpu"] and cpu == bronze.device("cpu:0") and cpu == "cpu:0"
    assert s in [None, s] and s == s and s != bronze.Stream()
    lib = bronze.compile_shader("kernel void k(device float* o) {}")
    assert "k" in lib and 5 not in lib and "\udcff" not in lib and not hasattr(lib, "\udcff")


def test_cuda_absent_is_clean():
    if bronze.is_available("cuda"):
        pytest.skip("CUDA present")
    assert bronze.device_count("cuda") == 0
    with pytest.raises(bronze.NotSupportedError):
        bronze.empty(4, device="cuda:0")
    with pytest.raises(bronze.NotSupportedError):
        bronze.set_device("cuda:0")


def test_streams_and_current_stream():
    s = bronze.Stream()
    assert bronze.current_stream() == bronze.default_stream()
    with bronze.stream(s):
        assert bronze.current_stream() == s
        t = bronze.ones(1000)
    assert bronze.current_stream() == bronze.default_stream()
    s.synchronize()
    assert s.query()
    assert t.numpy().sum() == 1000


def test_events():
    a, b = bronze.Event(enable_timing=True), bronze.Event(enable_timing=True)
    with pytest.raises(RuntimeError):
        a.elapsed_time(b)  # not recorded
    assert a.query()
    a.record()
    bronze.rand(1 << 20)
    b.record()
    b.synchronize()
    assert b.query()
    assert a.elapsed_time(b) >= 0
    with pytest.raises(RuntimeError):
        b.elapsed_time(a)  # end before start
    plain = bronze.Event()
    plain.record()
    with pytest.raises(RuntimeError):
        a.elapsed_time(plain)


def test_event_wait_orders_streams():
    producer, consumer = bronze.Stream(), bronze.Stream()
    with bronze.stream(producer):
        x = bronze.full((1 << 20,), 3.0)
    e = bronze.Event()
    e.record(producer)
    e.wait(consumer)
    with bronze.stream(consumer):
        y = x * 2
    consumer.synchronize()
    assert float(y.numpy()[-1]) == 6.0

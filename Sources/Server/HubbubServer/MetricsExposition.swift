import CoreMetrics
import Metrics
import Prometheus
import Synchronization

/// The process-wide Prometheus registry behind swift-metrics (bootstrapped once per process).
public final class MetricsExposition: Sendable {
    public static let shared = MetricsExposition()
    let registry: PrometheusCollectorRegistry

    private init() {
        registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    }

    /// The Prometheus text exposition of every metric.
    public func render() -> [UInt8] {
        var out: [UInt8] = []
        registry.emit(into: &out)
        return out
    }
}

import Foundation
import Logging
import ServiceLifecycle

/// This node's part in the cluster, as a service: registers the node (its address for forwarding)
/// and reads the links' key, renews its leases every third of a lease, and on a graceful stop
/// gives its leases back at once (so the others take its rooms before its connections drain) and
/// closes its links. Listed after the transport, so it stops before the transport drains.
public struct ClusterService: Service {
    let ownership: Ownership
    let links: PeerLinks
    let address: @Sendable () -> String
    let leaseSeconds: Double
    let logger: Logger

    public init(ownership: Ownership, links: PeerLinks, address: @escaping @Sendable () -> String, leaseSeconds: Double, logger: Logger) {
        self.ownership = ownership
        self.links = links
        self.address = address
        self.leaseSeconds = leaseSeconds
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var delay = 0.2
            while !Task.isCancelled {
                do {
                    links.setKey(try await ownership.register(address: address()))
                    ownership.health.renewed()
                    logger.info("cluster: node registered", metadata: ["node": "\(ownership.nodeID)", "address": "\(address())"])
                    break
                } catch {
                    logger.warning("cluster: cannot register this node yet", metadata: ["error": "\(error)"])
                    try? await Task.sleep(for: .seconds(delay))
                    delay = min(delay * 2, 5)
                }
            }
            while !Task.isCancelled {
                do { try await Task.sleep(for: .seconds(leaseSeconds / 3)) } catch { break }
                await ownership.renew()
            }
        }
        await ownership.release()
        await links.closeAll()
        logger.info("cluster: leases given back")
    }
}

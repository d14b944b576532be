import Accounts
import DomainSeam
import RouteService
import TonightService
import TransitService
import VenueService

extension HubbubServer {
    /// The domains this server runs, in the order they are built. Adding a domain is one line here.
    public static let standardDomains: [any Domain.Type] = [
        AccountsDomain.self,
        VenuesDomain.self,
        RoutesDomain.self,
        TransitDomain.self,
        TonightDomain.self,
    ]
}

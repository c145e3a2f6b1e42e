// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @notice Receiver hook of ERC-721 safe transfers.
interface IERC721Receiver {
    function onERC721Received(address operator, address from, uint256 tokenId, bytes calldata data)
        external
        returns (bytes4);
}

/// @title AgentPassport
/// @notice Minimal ERC-721 identity token for software agents. Each passport token carries an agent
///         card (type, capabilities, tier, issuer, issue time, revocation flag, metadata URI).
///         The same id space also holds domain attestation tokens minted by attestDomain.
///         Tiers: 1 bronze, 2 silver, 3 gold, 4 platinum.
contract AgentPassport {
    enum AgentType {
        CREATOR,
        EXECUTOR,
        UNKNOWN
    }

    struct Card {
        AgentType agentType;
        uint8 tier;
        bool revoked;
        address issuer;
        uint64 issuedAt;
        string metadataUri;
        string[] capabilities;
    }

    struct Attestation {
        string domain;
        bytes32 snapshotHash;
        address attester;
        uint64 attestedAt;
    }

    uint8 public constant MIN_TIER = 1;
    uint8 public constant MAX_TIER = 4;

    uint8 private constant KIND_NONE = 0;
    uint8 private constant KIND_PASSPORT = 1;
    uint8 private constant KIND_ATTESTATION = 2;

    string public constant name = "Agent Passport";
    string public constant symbol = "AGENT";

    address public owner;
    uint256 public nextTokenId = 1;

    mapping(address => bool) public isMinter;

    mapping(uint256 => address) private _owners;
    mapping(address => uint256) private _balances;
    mapping(uint256 => address) private _tokenApprovals;
    mapping(address => mapping(address => bool)) private _operatorApprovals;

    mapping(uint256 => uint8) private _kind;
    mapping(uint256 => Card) private _cards;
    mapping(address => uint256) private _passportOf;
    mapping(uint256 => Attestation) private _attestations;
    mapping(bytes32 => uint256) private _latestAttestation;

    // ERC-721
    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);
    event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId);
    event ApprovalForAll(address indexed owner, address indexed operator, bool approved);

    // Passport lifecycle
    event PassportMinted(
        uint256 indexed tokenId,
        address indexed owner,
        address indexed issuer,
        AgentType agentType,
        uint8 tier,
        string[] capabilities,
        string metadataUri
    );
    event TierUpgraded(uint256 indexed tokenId, uint8 oldTier, uint8 newTier);
    event PassportRevoked(uint256 indexed tokenId, address indexed revokedBy);
    event DomainAttested(
        uint256 indexed tokenId, bytes32 indexed snapshotHash, address indexed attester, string domain
    );
    event MinterSet(address indexed minter, bool allowed);
    event OwnershipTransferred(address indexed previousOwner, address indexed newOwner);

    error NotOwner();
    error NotMinter();
    error ZeroAddress();
    error TokenDoesNotExist(uint256 tokenId);
    error NotAPassport(uint256 tokenId);
    error NotTokenOwner(address from, uint256 tokenId);
    error NotAuthorized(address caller, uint256 tokenId);
    error ApproveToOwner();
    error UnsafeRecipient(address to);
    error InvalidTier(uint8 tier);
    error TierNotHigher(uint8 currentTier, uint8 requestedTier);
    error AlreadyHasPassport(address holder, uint256 tokenId);
    error PassportIsRevoked(uint256 tokenId);
    error EmptyDomain();
    error ZeroHash();

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner();
        _;
    }

    modifier onlyMinter() {
        if (msg.sender != owner && !isMinter[msg.sender]) revert NotMinter();
        _;
    }

    constructor() {
        owner = msg.sender;
        emit OwnershipTransferred(address(0), msg.sender);
    }

    // ---------------------------------------------------------------- administration

    function transferOwnership(address newOwner) external onlyOwner {
        if (newOwner == address(0)) revert ZeroAddress();
        emit OwnershipTransferred(owner, newOwner);
        owner = newOwner;
    }

    function setMinter(address minter, bool allowed) external onlyOwner {
        if (minter == address(0)) revert ZeroAddress();
        isMinter[minter] = allowed;
        emit MinterSet(minter, allowed);
    }

    // ---------------------------------------------------------------- ERC-165 / ERC-721

    function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
        return interfaceId == 0x01ffc9a7 // ERC-165
            || interfaceId == 0x80ac58cd // ERC-721
            || interfaceId == 0x5b5e139f; // ERC-721 metadata
    }

    function balanceOf(address holder) external view returns (uint256) {
        if (holder == address(0)) revert ZeroAddress();
        return _balances[holder];
    }

    function ownerOf(uint256 tokenId) public view returns (address) {
        address holder = _owners[tokenId];
        if (holder == address(0)) revert TokenDoesNotExist(tokenId);
        return holder;
    }

    function tokenURI(uint256 tokenId) external view returns (string memory) {
        ownerOf(tokenId);
        return _cards[tokenId].metadataUri;
    }

    function approve(address to, uint256 tokenId) external {
        address holder = ownerOf(tokenId);
        if (to == holder) revert ApproveToOwner();
        if (msg.sender != holder && !_operatorApprovals[holder][msg.sender]) {
            revert NotAuthorized(msg.sender, tokenId);
        }
        _tokenApprovals[tokenId] = to;
        emit Approval(holder, to, tokenId);
    }

    function getApproved(uint256 tokenId) external view returns (address) {
        ownerOf(tokenId);
        return _tokenApprovals[tokenId];
    }

    function setApprovalForAll(address operator, bool approved) external {
        if (operator == address(0)) revert ZeroAddress();
        _operatorApprovals[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    function isApprovedForAll(address holder, address operator) external view returns (bool) {
        return _operatorApprovals[holder][operator];
    }

    function transferFrom(address from, address to, uint256 tokenId) public {
        address holder = ownerOf(tokenId);
        if (holder != from) revert NotTokenOwner(from, tokenId);
        if (to == address(0)) revert ZeroAddress();
        if (
            msg.sender != holder && _tokenApprovals[tokenId] != msg.sender
                && !_operatorApprovals[holder][msg.sender]
        ) revert NotAuthorized(msg.sender, tokenId);
        if (_kind[tokenId] == KIND_PASSPORT && _cards[tokenId].revoked) revert PassportIsRevoked(tokenId);

        delete _tokenApprovals[tokenId];
        unchecked {
            _balances[from] -= 1;
            _balances[to] += 1;
        }
        _owners[tokenId] = to;

        if (_kind[tokenId] == KIND_PASSPORT) {
            if (_passportOf[from] == tokenId) delete _passportOf[from];
            if (_passportOf[to] == 0) _passportOf[to] = tokenId;
        }
        emit Transfer(from, to, tokenId);
    }

    function safeTransferFrom(address from, address to, uint256 tokenId) external {
        safeTransferFrom(from, to, tokenId, "");
    }

    function safeTransferFrom(address from, address to, uint256 tokenId, bytes memory data) public {
        transferFrom(from, to, tokenId);
        _checkReceiver(from, to, tokenId, data);
    }

    // ---------------------------------------------------------------- passports

    function mint(
        address to,
        AgentType agentType,
        string[] calldata capabilities,
        uint8 tier,
        string calldata metadataUri
    ) external onlyMinter returns (uint256 tokenId) {
        if (to == address(0)) revert ZeroAddress();
        if (tier < MIN_TIER || tier > MAX_TIER) revert InvalidTier(tier);
        uint256 existing = _passportOf[to];
        if (existing != 0) revert AlreadyHasPassport(to, existing);

        tokenId = nextTokenId++;
        _kind[tokenId] = KIND_PASSPORT;
        Card storage card = _cards[tokenId];
        card.agentType = agentType;
        card.tier = tier;
        card.issuer = msg.sender;
        card.issuedAt = uint64(block.timestamp);
        card.metadataUri = metadataUri;
        for (uint256 i = 0; i < capabilities.length; i++) {
            card.capabilities.push(capabilities[i]);
        }
        _passportOf[to] = tokenId;
        _owners[tokenId] = to;
        unchecked {
            _balances[to] += 1;
        }
        emit Transfer(address(0), to, tokenId);
        emit PassportMinted(tokenId, to, msg.sender, agentType, tier, capabilities, metadataUri);
    }

    function upgradeTier(uint256 tokenId, uint8 newTier) external onlyMinter {
        Card storage card = _passportCard(tokenId);
        if (card.revoked) revert PassportIsRevoked(tokenId);
        if (newTier > MAX_TIER) revert InvalidTier(newTier);
        uint8 oldTier = card.tier;
        if (newTier <= oldTier) revert TierNotHigher(oldTier, newTier);
        card.tier = newTier;
        emit TierUpgraded(tokenId, oldTier, newTier);
    }

    function revoke(uint256 tokenId) external onlyMinter {
        Card storage card = _passportCard(tokenId);
        if (card.revoked) revert PassportIsRevoked(tokenId);
        card.revoked = true;
        emit PassportRevoked(tokenId, msg.sender);
    }

    /// @notice The passport token id held by `holder`, or 0 when it holds none.
    function tokenOfOwner(address holder) external view returns (uint256) {
        return _passportOf[holder];
    }

    function getCard(uint256 tokenId)
        external
        view
        returns (
            AgentType agentType,
            string[] memory capabilities,
            uint8 tier,
            address issuer,
            uint64 issuedAt,
            bool revoked,
            string memory metadataUri
        )
    {
        Card storage card = _passportCard(tokenId);
        return (card.agentType, card.capabilities, card.tier, card.issuer, card.issuedAt, card.revoked, card.metadataUri);
    }

    function isPassport(uint256 tokenId) external view returns (bool) {
        return _kind[tokenId] == KIND_PASSPORT;
    }

    // ---------------------------------------------------------------- domain attestations

    /// @notice Records a trust snapshot hash for `domain` and mints an attestation token to the caller.
    function attestDomain(string calldata domain, bytes32 snapshotHash)
        external
        onlyMinter
        returns (uint256 tokenId)
    {
        if (bytes(domain).length == 0) revert EmptyDomain();
        if (snapshotHash == bytes32(0)) revert ZeroHash();

        tokenId = nextTokenId++;
        _kind[tokenId] = KIND_ATTESTATION;
        _attestations[tokenId] = Attestation(domain, snapshotHash, msg.sender, uint64(block.timestamp));
        _latestAttestation[keccak256(bytes(domain))] = tokenId;
        _owners[tokenId] = msg.sender;
        unchecked {
            _balances[msg.sender] += 1;
        }
        emit Transfer(address(0), msg.sender, tokenId);
        emit DomainAttested(tokenId, snapshotHash, msg.sender, domain);
    }

    function getAttestation(uint256 tokenId)
        external
        view
        returns (string memory domain, bytes32 snapshotHash, address attester, uint64 attestedAt)
    {
        if (_kind[tokenId] != KIND_ATTESTATION) revert TokenDoesNotExist(tokenId);
        Attestation storage a = _attestations[tokenId];
        return (a.domain, a.snapshotHash, a.attester, a.attestedAt);
    }

    /// @notice The latest attestation token id of `domain`, or 0.
    function latestAttestation(string calldata domain) external view returns (uint256) {
        return _latestAttestation[keccak256(bytes(domain))];
    }

    // ---------------------------------------------------------------- internals

    function _passportCard(uint256 tokenId) private view returns (Card storage) {
        if (_kind[tokenId] != KIND_PASSPORT) {
            if (_owners[tokenId] == address(0)) revert TokenDoesNotExist(tokenId);
            revert NotAPassport(tokenId);
        }
        return _cards[tokenId];
    }

    function _checkReceiver(address from, address to, uint256 tokenId, bytes memory data) private {
        if (to.code.length == 0) return;
        try IERC721Receiver(to).onERC721Received(msg.sender, from, tokenId, data) returns (bytes4 ret) {
            if (ret != IERC721Receiver.onERC721Received.selector) revert UnsafeRecipient(to);
        } catch {
            revert UnsafeRecipient(to);
        }
    }
}
